// LoRA on a policy, as LeRobot 0.6.1 wraps one (PreTrainedPolicy.wrap_with_peft, pretrained.py):
// every parameter frozen, then PEFT's get_peft_model: adapters on the selected Linears, in module
// order (so seeded draws equal PEFT's), and the full_training_modules (modules_to_save) trainable.
// The record of what was done stays on the policy (Policy::lora_adapters) for saving the adapter
// folder, `lrhost show` and `checkpoint merge`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "host/nn/lora_targets.hpp"
#include "host/policy/peft/peft_settings.hpp"

namespace lrhost::policy {

class Policy;

struct LoraAdapters {
  PeftSettings settings;
  nn::LoraTargets targets;  // as matched: the settings' or the type's LeRobot default
  nn::LoraSelection selection;
  // adapter_config.json's base_model_name_or_path: policy.pretrained_path as the user gave it.
  std::string base_model_name_or_path;
  std::string policy_type;
};

// `settings` with its preset filled in for `policy_type` (ConfigError when the type has no such
// preset); settings without a preset as they are.
PeftSettings resolve_peft_preset(const PeftSettings& settings, const std::string& policy_type);

// The type's LeRobot default targets (_get_default_peft_targets), or nullopt when LeRobot has none.
std::optional<nn::LoraTargets> default_lora_targets(const std::string& policy_type);

// Adapts `policy` (ConfigError when it has adapters already, when no targets are given and the type
// has no default, or as select_lora_modules says) and records it on the policy.
void add_lora_adapters(Policy& policy, const PeftSettings& settings, const std::string& base_model_name_or_path);

// Folds every adapter into its layer (nn::merge_lora) and drops the record: a plain policy whose
// forward equals the adapted one's up to fp32 rounding. ConfigError when the policy has no adapters.
void merge_lora_adapters(Policy& policy);

// What `asked` (a policy.peft, its preset resolved for `policy_type`, no targets meaning the type's
// default) sets differently from `have` (an adapter folder's): "r 8 vs 16", ...; empty when the same.
std::vector<std::string> lora_differences(const PeftSettings& asked, const PeftSettings& have,
                                          const std::string& policy_type);

// Parameters the adapters train: adapter weights and modules_to_save parameters, by name.
int64_t lora_trainable_parameters(const Policy& policy);

}  // namespace lrhost::policy
