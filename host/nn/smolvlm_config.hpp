// The parts of a SmolVLM / Idefics3 config.json (transformers 5.5 SmolVLMConfig) that a VLA built on
// it needs: the SigLIP `vision_config`, the Llama `text_config`, the connector's `scale_factor`, and
// the dtypes the config asks for, which decide the dtype transformers builds each part in (SmolVLA
// inherits them: reference smolvla.md §2). Unknown keys are ignored, as transformers keeps them.
#pragma once
#include <c10/core/ScalarType.h>

#include <filesystem>
#include <optional>

#include "host/nn/llama_config.hpp"
#include "host/nn/siglip_config.hpp"

namespace lrhost::nn {

struct SmolVLMConfig {
  SiglipVisionConfig vision;
  LlamaConfig text;
  int64_t scale_factor = 2;  // transformers' SmolVLMConfig default
  // `torch_dtype` (or transformers 5's `dtype`) at the top level and in text_config / vision_config;
  // nullopt when absent.
  std::optional<c10::ScalarType> dtype, text_dtype, vision_dtype;

  // The dtypes of a model built from this config without loading weights (SmolVLMForConditionalGeneration
  // (config)): the text model takes text_config's dtype, the vision tower vision_config's, both else
  // the top-level one; the connector and lm_head the top-level one; fp32 when nothing is said.
  c10::ScalarType text_model_dtype() const;
  c10::ScalarType vision_model_dtype() const;
  c10::ScalarType top_dtype() const;

  // Reads DIR/config.json (or the file itself). Errors name the file and the key.
  static SmolVLMConfig read(const std::filesystem::path& dir_or_file);
};

}  // namespace lrhost::nn
