// The table of built-in policy specs and lookup by name. Adding a policy type: its folder with a
// <type>_spec.cpp, and one line here.
#include "host/policy/registry.hpp"

#include <algorithm>

#include "host/policy/peft/peft_settings.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {

// Defined in each type's <type>_spec.cpp.
namespace act {
const PolicySpec& spec();
}
namespace diffusion {
const PolicySpec& spec();
}
namespace groot {
const PolicySpec& spec();
}
namespace mlp {
const PolicySpec& spec();
}
namespace pi0 {
const PolicySpec& spec();
}
namespace pi05 {
const PolicySpec& spec();
}
namespace smolvla {
const PolicySpec& spec();
}

const std::vector<const PolicySpec*>& policy_specs() {
  static const std::vector<const PolicySpec*> specs = [] {
    std::vector<const PolicySpec*> all{&act::spec(), &diffusion::spec(), &groot::spec(),  &mlp::spec(),
                                       &pi0::spec(), &pi05::spec(),      &smolvla::spec()};
    std::sort(all.begin(), all.end(), [](const PolicySpec* a, const PolicySpec* b) { return a->type < b->type; });
    return all;
  }();
  return specs;
}

std::vector<std::string> registered_policy_types() {
  std::vector<std::string> names;
  for (const auto* spec : policy_specs()) names.push_back(spec->type);
  return names;
}

const PolicySpec* find_policy_spec(const std::string& type) {
  for (const auto* spec : policy_specs())
    if (spec->type == type) return spec;
  return nullptr;
}

const PolicySpec& policy_spec(const std::string& type) {
  if (const auto* spec = find_policy_spec(type)) return *spec;
  throw util::ConfigError("unknown policy type '" + type + "'",
                          "registered types: " + util::quoted_list(registered_policy_types()));
}

std::shared_ptr<Policy> create_policy(const nlohmann::json& config, const PolicyFeatures& features) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string())
    throw util::ConfigError("policy config needs a string 'type' (one of " +
                            util::quoted_list(registered_policy_types()) + ")");
  // LoRA adapts a pretrained policy (ckpt::load_pretrained attaches the adapters); a new one is
  // refused as LeRobot's wrap_with_peft refuses it. An inactive table is the recipes' default.
  if (config.contains(kPeftKey) && PeftSettings::read(config[kPeftKey], "policy.peft"))
    throw lora_without_pretrained_error();
  return policy_spec(config["type"].get<std::string>()).create(config, features);
}

std::string recipe_that_trains(const std::string& type) {
  const auto* spec = find_policy_spec(type);
  if (spec == nullptr)
    return "'" + type +
           "' is not a policy type lrhost has (registered: " + util::quoted_list(registered_policy_types()) + ")";
  if (spec->lerobot_train)
    return "recipes/" + spec->lerobot_train->recipe + " trains '" + type +
           "' (or `lrhost lerobot-train --policy.type=" + type + " ...`)";
  return "no recipe under recipes/ trains '" + type +
         "' (recipes/examples/ has small ones): a recipe of your own builds it with lr.policy.defaults(\"" + type +
         "\")";
}

}  // namespace lrhost::policy
