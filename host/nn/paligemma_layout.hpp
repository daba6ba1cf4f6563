// The state-dict layout (key, shape) of LeRobot's PaliGemmaWithExpertModel — the PaliGemma VLM, the
// Gemma action expert and their two `lm_head`s — computed from the configs without building a module,
// so that a plan at full size (≈ 3.6 B values with the heads) needs no memory for weights. The keys
// are relative to `paligemma_with_expert.` and follow transformers' / LeRobot's names (pi0.md §3).
// The dead heads are listed because LeRobot's files hold them: lrhost keeps them as opaque tensors,
// loaded and saved, never computed. tests/unit/test_nn_gemma.cpp checks this layout against the
// modules themselves at a tiny size and against LeRobot's full-size tables (778 / 813 tensors with
// the policy's own projections).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "host/nn/gemma_config.hpp"
#include "host/nn/paligemma_config.hpp"

namespace lrhost::nn {

struct TensorLayout {
  std::string key;
  std::vector<int64_t> shape;
  bool operator==(const TensorLayout&) const = default;
};

// paligemma.model.{vision_tower,multi_modal_projector,language_model}.*, paligemma.lm_head.weight,
// gemma_expert.model.* (no embed_tokens: the expert reads embeddings) and gemma_expert.lm_head.weight.
// The expert's norms are adaptive (dense.{weight,bias}) when expert.use_adarms (pi05).
std::vector<TensorLayout> paligemma_with_expert_layout(const PaliGemmaConfig& vlm, const GemmaConfig& expert);

// The number of values of a layout.
int64_t layout_numel(const std::vector<TensorLayout>& layout);

}  // namespace lrhost::nn
