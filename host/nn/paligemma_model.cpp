// PaliGemma: SigLIP tower, linear projector, PiGemma language model.
#include "host/nn/paligemma_model.hpp"

#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

SiglipVisionModelImpl::SiglipVisionModelImpl(const SiglipVisionConfig& config) {
  vision_model = register_module("vision_model", SiglipVisionTransformer(config));
}

PaliGemmaProjectorImpl::PaliGemmaProjectorImpl(int64_t in_features, int64_t out_features) {
  linear = register_module("linear", torch::nn::Linear(torch::nn::LinearOptions(in_features, out_features).bias(true)));
}

torch::Tensor PaliGemmaProjectorImpl::forward(const torch::Tensor& image_features) {
  if (image_features.dim() < 1 || image_features.size(-1) != linear->weight.size(1))
    throw util::DataError("PaliGemma projector: input of shape " + c10::str(image_features.sizes()) +
                          " does not end in the vision width " + std::to_string(linear->weight.size(1)));
  return apply_linear(linear, image_features);
}

PaliGemmaModelImpl::PaliGemmaModelImpl(const PaliGemmaConfig& config) : config_(config) {
  config_.validate("PaliGemmaModel");
  // Registration order = transformers' (vision_tower, multi_modal_projector, language_model).
  vision_tower = register_module("vision_tower", SiglipVisionModel(config.vision));
  multi_modal_projector =
      register_module("multi_modal_projector", PaliGemmaProjector(config.vision.hidden_size, config.projection_dim));
  language_model = register_module("language_model", GemmaModel(config.text));
}

torch::Tensor PaliGemmaModelImpl::embed_image(const torch::Tensor& pixel_values) {
  auto features = vision_tower->forward(pixel_values);
  const auto projector_dtype = multi_modal_projector->linear->weight.scalar_type();
  return multi_modal_projector->forward(features.scalar_type() == projector_dtype ? features
                                                                                  : features.to(projector_dtype));
}

void PaliGemmaModelImpl::to_lerobot_bfloat16() {
  language_model->to_lerobot_bfloat16();
}

}  // namespace lrhost::nn
