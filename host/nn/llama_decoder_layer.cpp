// LlamaDecoderLayer: pre-norm attention and MLP blocks with residuals.
#include "host/nn/llama_decoder_layer.hpp"

namespace lrhost::nn {

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig& config, int64_t kv_input_size) {
  self_attn = register_module("self_attn", LlamaAttention(config, kv_input_size));
  mlp = register_module("mlp",
                        LlamaMLP(config.hidden_size, config.intermediate_size, config.mlp_bias, config.hidden_act));
  input_layernorm = register_module("input_layernorm", RMSNorm(config.hidden_size, config.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", RMSNorm(config.hidden_size, config.rms_norm_eps));
}

torch::Tensor LlamaDecoderLayerImpl::forward(const torch::Tensor& x, const RotaryTables& rope,
                                             const torch::Tensor& mask, const AttentionOptions& options) {
  auto h = x + self_attn->forward(input_layernorm->forward(x), rope, mask, options);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

}  // namespace lrhost::nn
