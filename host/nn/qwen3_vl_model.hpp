// Qwen3-VL as GR00T N1.7's backbone uses it (transformers 5.5's Qwen3VLModel + LeRobot's
// Qwen3Backbone, groot_n1_7.py): the prompt's token embeddings with each image's merged vision
// tokens scattered into its <|image_pad|> positions, DeepStack features added at those positions
// after the first text layers, M-RoPE position ids from get_rope_index, and the output of the last
// kept text layer before the final norm (GR00T keeps select_layer layers and reads the last one).
//  - qwen3_rope_index: get_rope_index for images (no video): over each row's attended tokens, text
//    runs count on all three rows; an image whose merged grid is h x w starting at p gets T = p,
//    H = p + row, W = p + column, and the next position is p + max(h, w) (Qwen3-VL's rule, not
//    Qwen2-VL's max + 1); padding stays 0.
// Module names are transformers' (`model.` + visual / language_model).
#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>

#include "host/nn/qwen3_vl_text.hpp"
#include "host/nn/qwen3_vl_vision.hpp"

namespace lrhost::nn {

struct Qwen3VLConfig {
  Qwen3VLTextConfig text;
  Qwen3VLVisionConfig vision;
  int64_t image_token_id = 151655;
  // A Qwen3-VL config.json object (text_config, vision_config and the token ids).
  static Qwen3VLConfig from_json(const nlohmann::json& object, const std::string& where);
};

// (3, B, L) position ids; input_ids and attention_mask (B, L), image_grid_thw (images, 3) in prompt
// order (row by row). DataError when the image tokens and the grids disagree.
torch::Tensor qwen3_rope_index(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                               const torch::Tensor& image_grid_thw, int64_t image_token_id, int64_t spatial_merge_size);

class Qwen3VLBackboneImpl : public torch::nn::Module {
 public:
  // text_layers: how many language-model layers to build and run (GR00T's select_layer); -1 = all.
  explicit Qwen3VLBackboneImpl(const Qwen3VLConfig& config, int64_t text_layers = -1);
  // The last built text layer's output (B, L, hidden) before the final norm.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                        const torch::Tensor& pixel_values, const torch::Tensor& image_grid_thw);
  const Qwen3VLConfig& config() const { return config_; }

  Qwen3VLVisionModel visual{nullptr};
  Qwen3VLTextModel language_model{nullptr};

 private:
  Qwen3VLConfig config_;
};
TORCH_MODULE(Qwen3VLBackbone);

}  // namespace lrhost::nn
