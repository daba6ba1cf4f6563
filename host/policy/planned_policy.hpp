// A policy described for the memory plan without building it: every parameter as a meta tensor (shape,
// dtype and requires_grad, no storage) grouped by the FSDP wrap units the policy declares, its
// optimizer and scheduler presets, and its activations per sample. `lrhost show` uses it where building
// the policy only to count it would take the memory the plan is about (pi0/pi05 at full size: 4 B
// parameters); the spec's plan_without_building makes it (policy_spec.hpp). A test builds the same
// policy at a small size and checks the description against the real module, parameter by parameter.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::policy {

using NamedMetaTensors = std::vector<std::pair<std::string, torch::Tensor>>;

struct PlannedUnit {
  std::string path;         // module path, e.g. "model.paligemma_with_expert.gemma_expert.model.layers.3"
  std::string module_type;  // e.g. "GemmaDecoderLayer"
  NamedMetaTensors params;  // state_dict keys, module order
};

struct PlannedPolicy {
  std::string type;
  std::vector<PlannedUnit> units;  // the declared unit types' instances, in module order
  NamedMetaTensors root;           // every parameter outside the units
  nlohmann::ordered_json optimizer_preset, scheduler_preset;
  // Activation bytes one training sample keeps for backward; -1 when not measured.
  int64_t activation_bytes_per_sample = -1;
  std::string activation_note;              // how the figure was obtained, printed under it
  bool activations_under_autocast = false;  // measured under the policy's own autocast (MemoryPlan's)
  // The Linear modules' paths (the modules LoRA can adapt), in parameter order.
  std::vector<std::string> linear_modules;

  // All parameters: the units' in order, then the root's.
  NamedMetaTensors parameters() const;
};

// A meta tensor standing for a parameter.
torch::Tensor meta_parameter(const std::vector<int64_t>& shape, c10::ScalarType dtype, bool requires_grad);

}  // namespace lrhost::policy
