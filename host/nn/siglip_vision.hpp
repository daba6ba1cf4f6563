// The SigLIP vision tower (transformers 5.5 SmolVLMVisionTransformer; PaliGemma's SiglipVisionTransformer
// without the pooling head has the same parameters): embeddings -> encoder -> post_layernorm, with
// transformers' child names so that weight_table(model, "model.vision_model.") lists a SmolVLM
// checkpoint's keys (`vision_tower.vision_model.` for PaliGemma). Load weights with
// nn::load_module_weights; convert dtypes with module.to(dtype).
#pragma once
#include <torch/torch.h>

#include "host/nn/siglip_config.hpp"
#include "host/nn/siglip_embeddings.hpp"
#include "host/nn/siglip_encoder.hpp"

namespace lrhost::nn {

class SiglipVisionTransformerImpl : public torch::nn::Module {
 public:
  explicit SiglipVisionTransformerImpl(const SiglipVisionConfig& config);
  // (B, C, H, W) pixel values already scaled to [-1, 1] (cast to the module's dtype and device) ->
  // last_hidden_state (B, (H/p)·(W/p), hidden) after post_layernorm.
  torch::Tensor forward(const torch::Tensor& pixel_values);

  const SiglipVisionConfig& config() const { return config_; }

  SiglipVisionEmbeddings embeddings{nullptr};
  SiglipEncoder encoder{nullptr};
  torch::nn::LayerNorm post_layernorm{nullptr};

 private:
  SiglipVisionConfig config_;
};
TORCH_MODULE(SiglipVisionTransformer);

}  // namespace lrhost::nn
