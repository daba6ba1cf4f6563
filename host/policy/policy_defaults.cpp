// Default configs per policy type, from each type's spec (policy_spec.hpp).
#include "host/policy/policy_defaults.hpp"

#include "host/policy/peft/peft_settings.hpp"
#include "host/policy/registry.hpp"

namespace lrhost::policy {

nlohmann::ordered_json default_policy_config_with_nulls(const std::string& type) {
  auto config = policy_spec(type).default_config();
  config[kPeftKey] = default_peft_table();
  return config;
}

nlohmann::ordered_json default_policy_config(const std::string& type) {
  auto full = default_policy_config_with_nulls(type);
  nlohmann::ordered_json defaults = nlohmann::ordered_json::object();
  for (const auto& [key, value] : full.items())
    if (!value.is_null() && key != "input_features" && key != "output_features") defaults[key] = value;
  return defaults;
}

}  // namespace lrhost::policy
