// SmolVLM module tree: construction with transformers' names, image embedding.
#include "host/nn/smolvlm_model.hpp"

namespace lrhost::nn {

SmolVLMModelImpl::SmolVLMModelImpl(const SmolVLMConfig& config, int64_t num_text_layers) {
  vision_model = register_module("vision_model", SiglipVisionTransformer(config.vision));
  connector = register_module(
      "connector", PixelShuffleConnector(config.vision.hidden_size, config.text.hidden_size, config.scale_factor));
  text_model = register_module("text_model", LlamaModel(config.text, num_text_layers));
}

torch::Tensor SmolVLMModelImpl::embed_image(const torch::Tensor& pixel_values) {
  const auto dtype = vision_model->post_layernorm->weight.scalar_type();
  return connector->forward(vision_model->forward(pixel_values.to(dtype)));
}

SmolVLMForConditionalGenerationImpl::SmolVLMForConditionalGenerationImpl(const SmolVLMConfig& config,
                                                                         int64_t num_text_layers) {
  model = register_module("model", SmolVLMModel(config, num_text_layers));
  lm_head = register_module(
      "lm_head",
      torch::nn::Linear(torch::nn::LinearOptions(config.text.hidden_size, config.text.vocab_size).bias(false)));
}

}  // namespace lrhost::nn
