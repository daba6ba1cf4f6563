// The patch and position embeddings of SmolVLM's SigLIP vision tower (transformers 5.5
// SmolVLMVisionEmbeddings, a NaViT variant of SiglipVisionEmbeddings): a valid-padding Conv2d with
// stride = kernel = patch size, then one learned position vector per patch. Position ids follow
// transformers' bucketize rule for an image whose patches are all valid (what SmolVLA and every
// fixed-size caller feed): at the configured image size they are arange(num_patches), the plain SigLIP
// rule, so PaliGemma-style towers use the same module; another size maps its patch grid onto the
// configured grid as transformers does.
#pragma once
#include <torch/torch.h>

#include "host/nn/siglip_config.hpp"

namespace lrhost::nn {

class SiglipVisionEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit SiglipVisionEmbeddingsImpl(const SiglipVisionConfig& config);
  // (B, C, H, W) pixel values (any float dtype; cast to the module's dtype) -> (B, (H/p)·(W/p), hidden).
  torch::Tensor forward(const torch::Tensor& pixel_values);
  // transformers' position ids of a full (all-valid) grid of patches_h × patches_w patches, (patches_h·patches_w,)
  // int64. `coord_dtype` is the pixel dtype, which transformers rounds the fractional coordinates to.
  torch::Tensor position_ids(int64_t patches_h, int64_t patches_w, c10::ScalarType coord_dtype,
                             const torch::Device& device) const;

  torch::nn::Conv2d patch_embedding{nullptr};
  torch::nn::Embedding position_embedding{nullptr};

 private:
  SiglipVisionConfig config_;
};
TORCH_MODULE(SiglipVisionEmbeddings);

}  // namespace lrhost::nn
