// Default configs per policy type, from each type's config struct.
#include "host/policy/policy_defaults.hpp"

#include "host/policy/act/act_config.hpp"
#include "host/policy/diffusion/diffusion_config.hpp"
#include "host/policy/mlp/mlp_policy.hpp"
#include "host/policy/registry.hpp"
#include "host/policy/smolvla/smolvla_config.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {

nlohmann::ordered_json default_policy_config_with_nulls(const std::string& type) {
  nlohmann::ordered_json full;
  if (type == "act") full = act::ACTConfig{}.to_json();
  else if (type == "diffusion") full = diffusion::DiffusionConfig{}.to_json();
  else if (type == "mlp") full = MlpConfig{}.to_json();
  else if (type == "smolvla") full = smolvla::SmolVLAConfig{}.to_recipe_json();
  else
    throw util::ConfigError("unknown policy type '" + type + "'",
                            "registered types: " + util::quoted_list(registered_policy_types()));
  return full;
}

nlohmann::ordered_json default_policy_config(const std::string& type) {
  auto full = default_policy_config_with_nulls(type);
  nlohmann::ordered_json defaults = nlohmann::ordered_json::object();
  for (const auto& [key, value] : full.items())
    if (!value.is_null() && key != "input_features" && key != "output_features") defaults[key] = value;
  return defaults;
}

}  // namespace lrhost::policy
