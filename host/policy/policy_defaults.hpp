// The default config of each built-in policy type, as config.json would hold it before features are
// known. Recipes start from it (lr.policy.defaults) so that every field of a policy can be set from
// the command line with lr.config's type checks (policy.dim_model=256), as `--policy.*` works in
// LeRobot. Fields whose default is null and the feature tables are left out: a Lua table cannot
// hold nil, and features come from the dataset.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace lrhost::policy {

// Every non-null field with its default, "type" first; ConfigError for an unknown type.
nlohmann::ordered_json default_policy_config(const std::string& type);
// The same with null fields kept (every field name of the type).
nlohmann::ordered_json default_policy_config_with_nulls(const std::string& type);

}  // namespace lrhost::policy
