// Fine-tuning a pretrained policy with command-line changes, as lerobot-train does for
// `--policy.path=DIR --policy.chunk_size=20`: the folder's config.json says what the policy is, and
// the fields the user typed go on top of it (never the recipe's own defaults), checked as any
// override is. A field that shapes the weights (a width, a layer count, max_action_dim) cannot
// change, since the pretrained weights would not fit: that is an error naming it. The recipe's config
// shows the result, the memory plan is made from it and the saved config.json is written from it,
// so the three agree.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace lrhost::policy {

// The fields of `type` whose value shapes its weights (empty for a type that declares none).
const std::vector<std::string>& weight_shape_fields(const std::string& type);

struct PretrainedPolicyTable {
  nlohmann::json policy;                       // the recipe's policy table with config.json's values
  std::filesystem::path dir;                   // the pretrained folder (a hub id resolved)
  std::vector<std::string> from_command_line;  // fields the user set, in the table's order
};

// The recipe's policy table `recipe_policy` (with a non-empty "pretrained_path") made to describe
// the pretrained policy: each field takes config.json's value unless it is in `explicit_fields`
// (set on the command line), fields config.json holds as null are dropped (a Lua table cannot hold
// them), and lrhost's own fields keep the recipe's value. ConfigError when the recipe's type is not
// the folder's, or when an explicit field changes one of weight_shape_fields().
PretrainedPolicyTable pretrained_policy_table(const nlohmann::json& recipe_policy,
                                              const std::set<std::string>& explicit_fields);

// `config_json` (a pretrained folder's config.json) with `changes` (a policy table as
// pretrained_policy_table made it) applied: every field of the policy type that differs, type-checked
// against config.json's value; "pretrained_path" and fields the type does not have are skipped.
// ConfigError naming `where` for a wrong type or a changed weight-shaping field.
nlohmann::ordered_json apply_policy_changes(nlohmann::ordered_json config_json, const nlohmann::json& changes,
                                            const std::string& where);

// The policy fields named by command-line overrides: "policy.chunk_size=20" -> chunk_size,
// "policy={...}" -> each key of the JSON object.
std::set<std::string> explicit_policy_fields(const std::vector<std::string>& overrides);

}  // namespace lrhost::policy
