// LoRA on a planned policy's parameter table; see lora_plan.hpp.
#include "host/policy/peft/lora_plan.hpp"

#include <set>

#include "host/policy/peft/lora_adapters.hpp"

namespace lrhost::policy {
namespace {

std::string module_of(const std::string& parameter) {
  const auto dot = parameter.rfind('.');
  return dot == std::string::npos ? std::string() : parameter.substr(0, dot);
}

bool inside(const std::string& name, const std::vector<std::string>& modules) {
  for (const auto& module : modules)
    if (name.rfind(module + ".", 0) == 0) return true;
  return false;
}

}  // namespace

void plan_lora_adapters(PlannedPolicy& planned, const PeftSettings& asked) {
  const std::string where = "policy.peft";
  const auto settings = resolve_peft_preset(asked, planned.type);
  const auto targets = settings.targets ? settings.targets : default_lora_targets(planned.type);
  if (!targets)
    throw util::ConfigError(where + ": LeRobot has no default LoRA targets for '" + planned.type + "' policies",
                            "name them: policy.peft.target_modules='<regex>' or 'all-linear'");
  // The modules in module order: every prefix of the parameter names, parents first.
  const std::set<std::string> linear(planned.linear_modules.begin(), planned.linear_modules.end());
  std::vector<nn::LoraCandidate> modules;
  std::set<std::string> seen;
  for (const auto& [name, tensor] : planned.parameters())
    for (auto dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
      const auto module = name.substr(0, dot);
      if (seen.insert(module).second) modules.push_back({module, linear.count(module) > 0, "module"});
    }
  const auto selection = nn::select_lora_modules(modules, *targets, settings.full_training_modules, where);
  const std::set<std::string> adapted(selection.adapted.begin(), selection.adapted.end());

  auto adapt = [&](NamedMetaTensors& params) {
    NamedMetaTensors out;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto& [name, tensor] = params[i];
      out.emplace_back(
          name, meta_parameter(tensor.sizes().vec(), tensor.scalar_type(), inside(name, selection.trained_fully)));
      const auto module = module_of(name);
      const bool last_of_module = i + 1 == params.size() || module_of(params[i + 1].first) != module;
      if (!adapted.count(module) || !last_of_module) continue;
      const auto weight =
          std::find_if(params.begin(), params.end(), [&](const auto& p) { return p.first == module + ".weight"; });
      const auto dtype = weight->second.scalar_type();
      const auto adapter_dtype = dtype == torch::kHalf || dtype == torch::kBFloat16 ? torch::kFloat32 : dtype;
      const int64_t out_features = weight->second.size(0), in_features = weight->second.size(1);
      const int64_t r = settings.for_module(module).r;
      out.emplace_back(module + ".lora_A.weight", meta_parameter({r, in_features}, adapter_dtype, true));
      out.emplace_back(module + ".lora_B.weight", meta_parameter({out_features, r}, adapter_dtype, true));
    }
    params = std::move(out);
  };
  for (auto& unit : planned.units) adapt(unit.params);
  adapt(planned.root);
}

}  // namespace lrhost::policy
