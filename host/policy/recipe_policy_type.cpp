// The recipe's policy type cannot change on the command line; see recipe_policy_type.hpp.
#include "host/policy/recipe_policy_type.hpp"

#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {

namespace {

std::string policy_type(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("policy") || !config["policy"].is_object()) return {};
  const auto& policy = config["policy"];
  return policy.contains("type") && policy["type"].is_string() ? policy["type"].get<std::string>() : std::string();
}

}  // namespace

void check_policy_type_kept(const nlohmann::json& defaults, const nlohmann::json& resolved, const std::string& recipe) {
  const std::string recipe_type = policy_type(defaults), asked = policy_type(resolved);
  if (recipe_type.empty() || asked == recipe_type || find_policy_spec(recipe_type) == nullptr) return;
  throw util::ConfigError("policy.type=" + asked + ": " + recipe + " is a '" + recipe_type +
                              "' recipe (its policy table holds " + recipe_type +
                              "'s fields), so policy.type cannot change here",
                          recipe_that_trains(asked));
}

}  // namespace lrhost::policy
