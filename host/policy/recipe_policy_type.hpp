// A recipe's policy table is one type's (lr.policy.defaults("pi05", ...) lists pi05's fields), so a
// command line that changes policy.type would hand that type's fields to another policy, which then
// refuses the first one it does not know ("unknown option 'action_expert_variant'"). lr.config checks
// it first and says which recipe trains the type that was asked for.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace lrhost::policy {

// ConfigError when `defaults` (the recipe's table before the overrides) has a policy.type naming a
// registered type and `resolved` (after them) names another. `recipe` is the recipe's path, for the
// message.
void check_policy_type_kept(const nlohmann::json& defaults, const nlohmann::json& resolved, const std::string& recipe);

}  // namespace lrhost::policy
