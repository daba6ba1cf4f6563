// Sizes of a SigLIP vision tower (the image encoder of SmolVLM, Idefics3 and PaliGemma), read from the
// `vision_config` object of a Hugging Face transformers config.json. Keys and defaults are those of
// transformers 5.5's SmolVLMVisionConfig (`model_type` "smolvlm_vision", also used when the object has
// no model_type) or SiglipVisionConfig ("siglip_vision_model"), so a config.json that leaves a field
// out means what it means to transformers. Nothing here is specific to one checkpoint.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace lrhost::nn {

struct SiglipVisionConfig {
  int64_t hidden_size = 768;
  int64_t intermediate_size = 3072;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t num_channels = 3;
  int64_t image_size = 224;
  int64_t patch_size = 16;
  std::string hidden_act = "gelu_pytorch_tanh";  // or "gelu" (exact erf form)
  double layer_norm_eps = 1e-6;
  double attention_dropout = 0.0;  // applied only in training mode, as in transformers

  // Reads `vision_config` (the object itself, not the whole config.json). Unknown keys are ignored,
  // as transformers keeps them as plain attributes; a known key of the wrong type, a non-positive
  // size, heads not dividing hidden_size or an unsupported activation throw util::ConfigError naming
  // `where` (e.g. "config.json: vision_config") and the key.
  static SiglipVisionConfig from_json(const nlohmann::json& vision_config, const std::string& where);
  void validate(const std::string& where) const;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t num_patches() const { return patches_per_side() * patches_per_side(); }
};

}  // namespace lrhost::nn
