// The module tree of transformers' SmolVLMForConditionalGeneration with its child names, so that a
// SmolVLM checkpoint's keys (model.vision_model.*, model.connector.modality_projection.proj.weight,
// model.text_model.*, lm_head.weight) load with nn::load_module_weights and named_parameters() lists
// them in transformers' order. Only the parts exist, no generation: VLAs call the vision tower, the
// connector, the token embedding and the text layers themselves (SmolVLA keeps only the first
// `num_text_layers` layers and never runs lm_head, which stays in the state dict as in LeRobot).
#pragma once
#include <torch/torch.h>

#include "host/nn/llama_model.hpp"
#include "host/nn/pixel_shuffle_connector.hpp"
#include "host/nn/siglip_vision.hpp"
#include "host/nn/smolvlm_config.hpp"

namespace lrhost::nn {

// SmolVLMModel: vision_model, connector, text_model.
class SmolVLMModelImpl : public torch::nn::Module {
 public:
  SmolVLMModelImpl(const SmolVLMConfig& config, int64_t num_text_layers);
  // (B, 3, H, W) in [-1, 1] -> (B, tokens, text hidden): the vision tower then the connector, in the
  // tower's dtype (the input is cast to it, as SmolVLA's embed_image does).
  torch::Tensor embed_image(const torch::Tensor& pixel_values);

  SiglipVisionTransformer vision_model{nullptr};
  PixelShuffleConnector connector{nullptr};
  LlamaModel text_model{nullptr};
};
TORCH_MODULE(SmolVLMModel);

// SmolVLMForConditionalGeneration: model, lm_head (no bias; not tied in SmolVLM2).
class SmolVLMForConditionalGenerationImpl : public torch::nn::Module {
 public:
  SmolVLMForConditionalGenerationImpl(const SmolVLMConfig& config, int64_t num_text_layers);

  SmolVLMModel model{nullptr};
  torch::nn::Linear lm_head{nullptr};
};
TORCH_MODULE(SmolVLMForConditionalGeneration);

}  // namespace lrhost::nn
