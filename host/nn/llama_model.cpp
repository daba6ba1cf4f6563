// Llama text model (embeddings, decoder layers, final norm) and its from-scratch initialisation.
#include "host/nn/llama_model.hpp"

namespace lrhost::nn {

LlamaModelImpl::LlamaModelImpl(const LlamaConfig& config, int64_t num_layers)
    : config_(config), rotary_emb_(config.head_dim, config.rope_theta) {
  config.validate("LlamaModel");
  const int64_t count = num_layers < 0 ? config.num_hidden_layers : num_layers;
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(config.vocab_size, config.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < count; ++i) layers->push_back(LlamaDecoderLayer(config));
  norm = register_module("norm", RMSNorm(config.hidden_size, config.rms_norm_eps));
}

torch::Tensor LlamaModelImpl::embed(const torch::Tensor& input_ids) {
  return embed_tokens->forward(input_ids);
}

torch::Tensor LlamaModelImpl::forward(const torch::Tensor& inputs_embeds, const torch::Tensor& position_ids,
                                      const torch::Tensor& mask, const AttentionOptions& options) {
  const auto rope = rotary_emb_.tables(position_ids, inputs_embeds.scalar_type());
  auto h = inputs_embeds;
  for (std::size_t i = 0; i < layers->size(); ++i) h = layer(i)->forward(h, rope, mask, options);
  return norm->forward(h);
}

void init_llama_weights(torch::nn::Module& module, double std) {
  torch::NoGradGuard no_grad;
  for (auto& child : module.modules(/*include_self=*/true)) {
    if (auto* linear = child->as<torch::nn::Linear>()) {
      linear->weight.normal_(0.0, std);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* embedding = child->as<torch::nn::Embedding>()) {
      embedding->weight.normal_(0.0, std);
    } else if (auto* rms = child->as<RMSNorm>()) {
      rms->weight.fill_(1.0);
    }
  }
}

}  // namespace lrhost::nn
