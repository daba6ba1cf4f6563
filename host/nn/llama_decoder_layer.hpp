// transformers' LlamaDecoderLayer: x + self_attn(input_layernorm(x)), then
// h + mlp(post_attention_layernorm(h)). Module names (self_attn, mlp, input_layernorm,
// post_attention_layernorm) and registration order are transformers', so a layer's weights load
// from `model.text_model.layers.{i}.` keys and named_parameters() lists them in the same order.
#pragma once
#include <torch/torch.h>

#include "host/nn/llama_attention.hpp"
#include "host/nn/llama_config.hpp"
#include "host/nn/llama_mlp.hpp"
#include "host/nn/rms_norm.hpp"

namespace lrhost::nn {

class LlamaDecoderLayerImpl : public torch::nn::Module {
 public:
  // kv_input_size: the width k_proj/v_proj read (0 = hidden_size); see LlamaAttentionImpl.
  explicit LlamaDecoderLayerImpl(const LlamaConfig& config, int64_t kv_input_size = 0);
  // x (B, L, hidden); rope from LlamaRotaryEmbedding::tables(position_ids, x.dtype());
  // mask and options as for attend() (attention_core.hpp).
  torch::Tensor forward(const torch::Tensor& x, const RotaryTables& rope, const torch::Tensor& mask = {},
                        const AttentionOptions& options = {});

  LlamaAttention self_attn{nullptr};
  LlamaMLP mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(LlamaDecoderLayer);

}  // namespace lrhost::nn
