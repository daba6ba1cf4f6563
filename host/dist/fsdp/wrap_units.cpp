// Finding FSDP wrap units in a policy's module tree by module type name.
#include "host/dist/fsdp/wrap_units.hpp"

#include <algorithm>
#include <set>

#include "host/nn/forward_hooks.hpp"
#include "host/util/error.hpp"

namespace lrhost::dist::fsdp {
namespace {

std::string joined(const std::set<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

std::vector<WrapUnit> find_wrap_units(policy::Policy& policy, const std::vector<std::string>& wrap_modules) {
  std::vector<std::string> types = wrap_modules.empty() ? policy.fsdp_wrap_module_types() : wrap_modules;
  std::set<std::string> present;
  for (const auto& item : policy.named_modules("", /*include_self=*/false))
    present.insert(policy::module_type_name(*item.value()));
  if (types.empty())
    throw util::ConfigError(
        "FSDP: policy '" + policy.type() + "' declares no wrap-unit module types and the recipe names none",
        "set accelerator.fsdp.wrap_modules to module types of this policy (" + joined(present) +
            "); a root-only wrap would shard nothing per layer, so it is not done silently");
  for (const auto& type : types) {
    if (!present.count(type))
      throw util::ConfigError(
          "accelerator.fsdp.wrap_modules: '" + type + "' matches no module of policy '" + policy.type() + "'",
          "its module types are: " + joined(present));
    if (!nn::supports_forward_hooks(type))
      throw util::ConfigError(
          "accelerator.fsdp.wrap_modules: module type '" + type +
              "' cannot be an FSDP unit: its forward runs no FSDP hooks",
          "policy '" + policy.type() + "' declares these unit types: " + [&] {
            auto declared = policy.fsdp_wrap_module_types();
            return joined(std::set<std::string>(declared.begin(), declared.end()));
          }());
  }
  std::set<std::string> wanted(types.begin(), types.end());

  std::vector<WrapUnit> units;
  std::set<const torch::TensorImpl*> claimed;
  // named_modules lists parents before children: a module inside a unit already taken is skipped
  // (units do not nest).
  std::vector<std::string> taken_paths;
  for (const auto& item : policy.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    const std::string& path = item.key();
    bool inside = std::any_of(taken_paths.begin(), taken_paths.end(),
                              [&](const std::string& p) { return path.rfind(p + ".", 0) == 0; });
    if (inside || !wanted.count(policy::module_type_name(*item.value()))) continue;
    WrapUnit unit{path, policy::module_type_name(*item.value()), item.value().get(), {}};
    for (const auto& param : item.value()->named_parameters()) {
      unit.params.emplace_back(path + "." + param.key(), param.value());
      claimed.insert(param.value().unsafeGetTensorImpl());
    }
    taken_paths.push_back(path);
    if (!unit.params.empty()) units.push_back(std::move(unit));
  }
  WrapUnit root{"", "root", &policy, {}};
  for (const auto& param : policy.named_parameters())
    if (!claimed.count(param.value().unsafeGetTensorImpl())) root.params.emplace_back(param.key(), param.value());
  if (!root.params.empty()) units.push_back(std::move(root));
  return units;
}

std::vector<ParamGroupSpec> param_groups(const WrapUnit& unit) {
  std::vector<ParamGroupSpec> groups;
  for (bool frozen : {false, true}) {
    const std::size_t first = groups.size();
    for (const auto& [name, param] : unit.params) {
      if (param.requires_grad() == frozen) continue;
      auto same = std::find_if(groups.begin() + static_cast<std::ptrdiff_t>(first), groups.end(), [&](const auto& g) {
        return g.params.front().second.scalar_type() == param.scalar_type();
      });
      if (same == groups.end()) same = groups.insert(groups.end(), ParamGroupSpec{frozen, {}});
      same->params.emplace_back(name, param);
    }
  }
  return groups;
}

std::vector<UnitLayout> plan_unit_layouts(policy::Policy& policy, const std::vector<std::string>& wrap_modules,
                                          int shard_size) {
  return plan_unit_layouts(find_wrap_units(policy, wrap_modules), shard_size);
}

std::vector<UnitLayout> plan_unit_layouts(const std::vector<WrapUnit>& units, int shard_size) {
  std::vector<UnitLayout> layouts;
  for (const auto& unit : units)
    for (const auto& group : param_groups(unit))
      layouts.push_back(make_unit_layout(unit.path.empty() ? "root" : unit.path, unit.module_type, group.params,
                                         shard_size, group.frozen));
  return layouts;
}

}  // namespace lrhost::dist::fsdp
