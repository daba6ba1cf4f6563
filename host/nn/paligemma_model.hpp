// transformers 5.5's PaliGemmaModel as LeRobot builds it for pi0/pi05 (PaliGemmaModelWithPiGemma):
// vision_tower.vision_model (the SigLIP tower, no pooling head), multi_modal_projector.linear
// (vision hidden -> projection_dim, with bias) and language_model (a PiGemma text model). Child names
// are transformers', so the keys under `…paligemma.model.` load strictly. Image features are the
// projector's output as is: no √width scaling (SmolVLM scales, PaliGemma does not).
#pragma once
#include <torch/torch.h>

#include "host/nn/gemma_model.hpp"
#include "host/nn/paligemma_config.hpp"
#include "host/nn/siglip_vision.hpp"

namespace lrhost::nn {

// SiglipVisionModel: only a `vision_model` child (the key level transformers adds).
class SiglipVisionModelImpl : public torch::nn::Module {
 public:
  explicit SiglipVisionModelImpl(const SiglipVisionConfig& config);
  torch::Tensor forward(const torch::Tensor& pixel_values) { return vision_model->forward(pixel_values); }

  SiglipVisionTransformer vision_model{nullptr};
};
TORCH_MODULE(SiglipVisionModel);

// PaliGemmaMultiModalProjector: `linear` (in -> out, bias).
class PaliGemmaProjectorImpl : public torch::nn::Module {
 public:
  PaliGemmaProjectorImpl(int64_t in_features, int64_t out_features);
  torch::Tensor forward(const torch::Tensor& image_features);

  torch::nn::Linear linear{nullptr};
};
TORCH_MODULE(PaliGemmaProjector);

class PaliGemmaModelImpl : public torch::nn::Module {
 public:
  explicit PaliGemmaModelImpl(const PaliGemmaConfig& config);

  // get_image_features: pixel values (B, 3, H, W) in [-1, 1] (cast to the tower's dtype) ->
  // (B, patches, projection_dim) in the projector's dtype.
  torch::Tensor embed_image(const torch::Tensor& pixel_values);

  // LeRobot's bf16 mode (to_bfloat16_for_selected_params): the language model goes bf16 except its
  // norms (GemmaModelImpl::to_lerobot_bfloat16); vision tower and projector stay fp32.
  void to_lerobot_bfloat16();

  const PaliGemmaConfig& config() const { return config_; }

  SiglipVisionModel vision_tower{nullptr};
  PaliGemmaProjector multi_modal_projector{nullptr};
  GemmaModel language_model{nullptr};

 private:
  PaliGemmaConfig config_;
};
TORCH_MODULE(PaliGemmaModel);

}  // namespace lrhost::nn
