// The table of built-in policy types and lookup by name.
#include "host/policy/registry.hpp"

#include <map>

#include "host/policy/act/act_policy.hpp"
#include "host/policy/diffusion/diffusion_policy.hpp"
#include "host/policy/mlp/mlp_policy.hpp"
#include "host/policy/smolvla/smolvla_policy.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {
namespace {
const std::map<std::string, PolicyFactory>& factories() {
  static const std::map<std::string, PolicyFactory> table{
      {"act", act::make_act_policy},
      {"diffusion", diffusion::make_diffusion_policy},
      {"mlp", make_mlp_policy},
      {"smolvla", smolvla::make_smolvla_policy},
  };
  return table;
}
}  // namespace

std::vector<std::string> registered_policy_types() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories()) names.push_back(name);
  return names;
}

std::shared_ptr<Policy> create_policy(const nlohmann::json& config, const PolicyFeatures& features) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string())
    throw util::ConfigError("policy config needs a string 'type' (one of " +
                            util::quoted_list(registered_policy_types()) + ")");
  auto type = config["type"].get<std::string>();
  auto found = factories().find(type);
  if (found == factories().end())
    throw util::ConfigError("unknown policy type '" + type + "'",
                            "registered types: " + util::quoted_list(registered_policy_types()));
  return found->second(config, features);
}

}  // namespace lrhost::policy
