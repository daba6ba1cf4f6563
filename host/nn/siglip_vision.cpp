// SigLIP vision tower: embeddings, encoder, final layer norm (see siglip_vision.hpp).
#include "host/nn/siglip_vision.hpp"

namespace lrhost::nn {

SiglipVisionTransformerImpl::SiglipVisionTransformerImpl(const SiglipVisionConfig& config) : config_(config) {
  config_.validate("SigLIP vision tower");
  embeddings = register_module("embeddings", SiglipVisionEmbeddings(config_));
  encoder = register_module("encoder", SiglipEncoder(config_));
  post_layernorm = register_module(
      "post_layernorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({config_.hidden_size}).eps(config_.layer_norm_eps)));
}

torch::Tensor SiglipVisionTransformerImpl::forward(const torch::Tensor& pixel_values) {
  return post_layernorm->forward(encoder->forward(embeddings->forward(pixel_values)));
}

}  // namespace lrhost::nn
