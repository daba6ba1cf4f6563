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

PeftSettings resolve_peft_preset(const PeftSettings& settings, const std::string& policy_type) {
  if (settings.preset.empty()) return settings;
  const auto* spec = find_policy_spec(policy_type);
  if (spec == nullptr || !spec->openpi_lora)
    throw util::ConfigError("policy.peft.preset = \"" + settings.preset + "\": there is no openpi LoRA recipe for '" +
                                policy_type + "' policies",
                            "openpi's LoRA is pi0's and pi05's; name the targets instead");
  const auto& openpi = *spec->openpi_lora;
  auto resolved = settings;
  resolved.preset.clear();
  resolved.targets = nn::LoraTargets::from_json(openpi.targets, "the openpi preset's targets");
  resolved.lora.r = openpi.r;
  resolved.lora.alpha = openpi.alpha;
  resolved.rank_pattern = openpi.rank_pattern;
  resolved.alpha_pattern = openpi.alpha_pattern;
  resolved.full_training_modules = openpi.full_training_modules;
  return resolved;
}

void add_lora_adapters(Policy& policy, const PeftSettings& asked, const std::string& base_model_name_or_path) {
  const std::string where = "policy.peft";
  const auto settings = resolve_peft_preset(asked, policy.type());
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
    nn::add_lora(*modules[name]->as<torch::nn::LinearImpl>(), settings.for_module(name));
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

std::vector<std::string> lora_differences(const PeftSettings& asked_in, const PeftSettings& have,
                                          const std::string& policy_type) {
  const auto asked = resolve_peft_preset(asked_in, policy_type);
  const auto asked_targets = asked.targets ? asked.targets : default_lora_targets(policy_type);
  const auto targets_json = [](const std::optional<nn::LoraTargets>& t) {
    return t ? t->to_json().dump() : std::string("none");
  };
  std::vector<std::string> differ;
  const auto& a = asked.lora;
  const auto& h = have.lora;
  if (a.r != h.r) differ.push_back("r " + std::to_string(a.r) + " vs " + std::to_string(h.r));
  if (a.alpha != h.alpha) differ.push_back("lora_alpha " + std::to_string(a.alpha) + " vs " + std::to_string(h.alpha));
  if (a.dropout != h.dropout) differ.push_back("lora_dropout");
  if (a.use_rslora != h.use_rslora) differ.push_back("use_rslora");
  if (targets_json(asked_targets) != targets_json(have.targets))
    differ.push_back("target_modules " + targets_json(asked_targets) + " vs " + targets_json(have.targets));
  if (asked.full_training_modules != have.full_training_modules) differ.push_back("full_training_modules");
  if (asked.rank_pattern != have.rank_pattern || asked.alpha_pattern != have.alpha_pattern)
    differ.push_back("rank_pattern / alpha_pattern");
  return differ;
}

int64_t lora_trainable_parameters(const Policy& policy) {
  int64_t total = 0;
  for (const auto& p : policy.parameters())
    if (p.requires_grad()) total += p.numel();
  return total;
}

}  // namespace lrhost::policy
