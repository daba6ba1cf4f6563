// GR00T N1.7's network (LeRobot's GR00TN17, groot_n1_7.py): the Qwen3-VL backbone cut to
// select_layer text layers, whose last layer's output (before the final norm) feeds the action head
// with the prompt's attention mask and image-token mask. Module names are LeRobot's under
// `_groot_model.`: backbone.model.model.{visual, language_model} and action_head. The language
// model's lm_head is tied to embed_tokens and unused (its logits are dropped): it is not built, and
// a weight file's `backbone.model.lm_head.weight` (the name LeRobot's model.safetensors keeps for
// the tied pair) loads into embed_tokens.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "host/nn/qwen3_vl_model.hpp"
#include "host/policy/groot/groot_action_head.hpp"

namespace lrhost::policy::groot {

struct GrootModelConfig {
  nn::Qwen3VLConfig backbone;
  int64_t select_layer = 16;  // text layers kept (GR00T's select_layer)
  GrootHeadConfig head;
  // `groot` is a GR00T config.json (GR00TN17Config: the head's fields and select_layer), `backbone`
  // the Qwen3-VL config object of its model_name. ConfigError naming the files and keys.
  static GrootModelConfig from_json(const nlohmann::json& groot, const nlohmann::json& backbone,
                                    const std::string& where);
};

// One processed batch as GR00T's pack and VLM-encode steps give it (LeRobot's key names).
struct GrootBatch {
  torch::Tensor input_ids, attention_mask;  // (B, L), left-padded prompt
  torch::Tensor pixel_values;               // (patches, C·Tp·P·P)
  torch::Tensor image_grid_thw;             // (images, 3)
  torch::Tensor state;                      // (B, 1, max_state_dim)
  torch::Tensor embodiment_id;              // (B)
};

class GrootModelImpl : public torch::nn::Module {
 public:
  explicit GrootModelImpl(const GrootModelConfig& config);
  // The head's inputs: the backbone's features and masks, the batch's state and embodiment.
  GrootHeadInputs encode(const GrootBatch& batch);
  torch::Tensor loss(const GrootBatch& batch, const torch::Tensor& action, const torch::Tensor& action_mask,
                     const torch::Tensor& noise, const torch::Tensor& time, const torch::Tensor& state_dropped = {});
  // GrootActionHead::training_loss on this batch (the backbone draws nothing).
  torch::Tensor training_loss(const GrootBatch& batch, const torch::Tensor& action, const torch::Tensor& action_mask);
  torch::Tensor sample(const GrootBatch& batch, const torch::Tensor& noise);
  // Strict load of LeRobot's weights under `prefix` (e.g. "_groot_model."), lm_head into embed_tokens.
  void load_weights(const std::filesystem::path& file, const std::string& prefix);
  // The tied pair's names in a weight file's tensors (under `prefix`): stored as lm_head (LeRobot),
  // embed_tokens (transformers' save_pretrained) or both with the same values, read as embed_tokens;
  // and back, as LeRobot stores it. Each returns whether it renamed anything.
  static bool read_tied_embedding(std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                  const std::string& prefix);
  static bool write_tied_embedding(std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                   const std::string& prefix);

  std::shared_ptr<torch::nn::Module> backbone;  // "backbone" -> "model" -> "model" (the Qwen3-VL model)
  nn::Qwen3VLBackbone qwen{nullptr};            // backbone.model.model
  GrootActionHead action_head{nullptr};

 private:
  GrootModelConfig config_;
};
TORCH_MODULE(GrootModel);

}  // namespace lrhost::policy::groot
