// LoRA on a policy planned without building it (planned_policy.hpp; pi0/pi05 at full size): what
// add_lora_adapters does to a built policy, done to the meta parameter table, so that `lrhost show`
// plans a LoRA run: every base parameter frozen, an fp32 (or the weight's dtype when wider) lora_A
// (r x in) and lora_B (out x r) after each adapted Linear's parameters in its unit, the
// full_training_modules trainable. A unit test checks it against add_lora_adapters on a built policy.
#pragma once
#include "host/policy/peft/peft_settings.hpp"
#include "host/policy/planned_policy.hpp"

namespace lrhost::policy {

// ConfigError as add_lora_adapters (no targets for the type, targets that match nothing, ...).
void plan_lora_adapters(PlannedPolicy& planned, const PeftSettings& settings);

}  // namespace lrhost::policy
