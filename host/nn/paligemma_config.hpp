// Sizes of a PaliGemma model (transformers 5.5 PaliGemmaConfig): a SigLIP vision tower, the linear
// multi-modal projector (vision hidden -> projection_dim) and a Gemma language model. Read from a
// PaliGemma config.json, or built in code for pi0/pi05, whose PaliGemma is fixed (LeRobot builds it
// in code and ships no config for it): SigLIP So400m/14 at 224 with intermediate 4304 and Gemma-2B.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "host/nn/gemma_config.hpp"
#include "host/nn/siglip_config.hpp"

namespace lrhost::nn {

struct PaliGemmaConfig {
  SiglipVisionConfig vision;
  GemmaConfig text;
  int64_t projection_dim = 2048;  // vision_config.projection_dim: the projector's output width

  // pi0/pi05's PaliGemma (modeling_pi0.py PaliGemmaWithExpertModel): So400m/14, 27 layers, width
  // 1152, 16 heads, MLP 4304, at `image_size` (LeRobot's image_resolution), projection 2048, Gemma-2B.
  static PaliGemmaConfig so400m_gemma_2b(int64_t image_size = 224);

  // Checks that the projector feeds the language model (projection_dim == text.hidden_size).
  void validate(const std::string& where) const;
};

// Reads the top level of a PaliGemma config.json (`vision_config`, `text_config`); `where` names the
// file in errors.
PaliGemmaConfig paligemma_config_from_json(const nlohmann::json& top, const std::string& where);
PaliGemmaConfig read_paligemma_config(const std::filesystem::path& config_json);

}  // namespace lrhost::nn
