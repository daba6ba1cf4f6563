// transformers' LlamaModel without a KV cache: embed_tokens, layers.{i}, norm (the module tree under
// a VLM's `model.text_model.` prefix), plus the default rotary embedding shared by all layers.
// The layer count is configurable separately from the config because SmolVLA keeps only the first
// 16 of SmolVLM2's 32 text layers. Also: transformers' from-scratch initialisation.
#pragma once
#include <torch/torch.h>

#include "host/nn/llama_config.hpp"
#include "host/nn/llama_decoder_layer.hpp"
#include "host/nn/rms_norm.hpp"
#include "host/nn/rotary_embedding.hpp"

namespace lrhost::nn {

class LlamaModelImpl : public torch::nn::Module {
 public:
  // num_layers < 0: config.num_hidden_layers.
  explicit LlamaModelImpl(const LlamaConfig& config, int64_t num_layers = -1);

  torch::Tensor embed(const torch::Tensor& input_ids);
  // inputs_embeds (B, L, hidden), position_ids (B, L); runs every layer, then norm.
  torch::Tensor forward(const torch::Tensor& inputs_embeds, const torch::Tensor& position_ids,
                        const torch::Tensor& mask = {}, const AttentionOptions& options = {});

  LlamaDecoderLayer layer(std::size_t index) const { return layers->ptr<LlamaDecoderLayerImpl>(index); }
  const LlamaConfig& config() const { return config_; }
  const LlamaRotaryEmbedding& rotary_emb() const { return rotary_emb_; }
  LlamaRotaryEmbedding& rotary_emb() { return rotary_emb_; }

  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};

 private:
  LlamaConfig config_;
  LlamaRotaryEmbedding rotary_emb_;
};
TORCH_MODULE(LlamaModel);

// transformers' _init_weights for Llama modules: Linear and Embedding weights ~ N(0, std), biases 0,
// RMSNorm weights 1. Applies to every submodule of `module` (a layer, a model, an expert).
void init_llama_weights(torch::nn::Module& module, double std);

}  // namespace lrhost::nn
