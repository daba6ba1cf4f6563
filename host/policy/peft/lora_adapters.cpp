// LoRA adapters on a policy; see lora_adapters.hpp.
#include "host/policy/peft/lora_adapters.hpp"

#include "host/policy/policy.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {

std::optional<nn::LoraTargets> default_lora_targets(const std::string& policy_type) {
  const auto* spec = find_policy_spec(policy_type);
  if (spec == nullptr || !spec->lerobot_peft) return std::nullopt;
  return nn::LoraTargets::from_json(spec->lerobot_peft->default_targets, policy_type + " default LoRA targets");
}

void add_lora_adapters(Policy& policy, const PeftSettings& settings, const std::string& base_model_name_or_path) {
  const std::string where = "policy.peft";
  if (policy.lora_adapters())
    throw util::ConfigError(where + ": this " + policy.type() + " policy has LoRA adapters already");
  auto adapters = std::make_shared<LoraAdapters>();
  adapters->settings = settings;
  adapters->base_model_name_or_path = base_model_name_or_path;
  adapters->policy_type = policy.type();
  if (settings.targets) {
    adapters->targets = *settings.targets;
  } else if (auto fallback = default_lora_targets(policy.type())) {
    adapters->targets = *fallback;
  } else {
    throw util::ConfigError(where + ": LeRobot has no default LoRA targets for '" + policy.type() + "' policies",
                            "name them: policy.peft.target_modules='<regex>' or 'all-linear'");
  }
  adapters->selection = nn::select_lora_modules(policy, adapters->targets, settings.full_training_modules, where);

  for (auto& p : policy.parameters()) p.set_requires_grad(false);
  const auto modules = policy.named_modules("", /*include_self=*/false);
  for (const auto& name : adapters->selection.adapted)
    nn::add_lora(*modules[name]->as<torch::nn::LinearImpl>(), settings.lora);
  for (const auto& name : adapters->selection.trained_fully)
    for (auto& p : modules[name]->parameters()) p.set_requires_grad(true);
  policy.set_lora_adapters(std::move(adapters));
}

void merge_lora_adapters(Policy& policy) {
  const auto* adapters = policy.lora_adapters();
  if (!adapters) throw util::ConfigError("the " + policy.type() + " policy has no LoRA adapters to merge");
  const auto modules = policy.named_modules("", /*include_self=*/false);
  for (const auto& name : adapters->selection.adapted) nn::merge_lora(*modules[name]->as<torch::nn::LinearImpl>());
  policy.set_lora_adapters(nullptr);
}

int64_t lora_trainable_parameters(const Policy& policy) {
  int64_t total = 0;
  for (const auto& p : policy.parameters())
    if (p.requires_grad()) total += p.numel();
  return total;
}

}  // namespace lrhost::policy
