// Command-line changes on top of a pretrained policy's config.json; see pretrained_overrides.hpp.
#include "host/policy/pretrained_overrides.hpp"

#include <algorithm>

#include "host/config/overrides.hpp"
#include "host/policy/peft/peft_settings.hpp"
#include "host/policy/policy_defaults.hpp"
#include "host/policy/pretrained_folder.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Fields of the recipe's policy table that never come from config.json (peft: the run's adapters,
// peft_settings.hpp).
bool recipe_only(const std::string& field) {
  return field == "pretrained_path" || field == "type" || field == kPeftKey;
}

// lrhost's own run options of the type (its spec's run_option_fields, e.g. SmolVLA's
// cache_vision_features): LeRobot's config.json cannot hold them, so a fine-tuning run takes them from
// the recipe like a fresh one.
bool run_option(const std::string& field, const std::string& type) {
  const auto* spec = find_policy_spec(type);
  return spec && std::find(spec->run_option_fields.begin(), spec->run_option_fields.end(), field) !=
                     spec->run_option_fields.end();
}

bool same_kind(const ordered_json& a, const json& b) {
  if (a.is_null() || b.is_null()) return true;  // LeRobot's None fields take any value
  if (a.is_number() && b.is_number()) return true;
  return a.type() == b.type();
}

bool shapes_weights(const std::string& type, const std::string& field) {
  const auto& fields = weight_shape_fields(type);
  return std::find(fields.begin(), fields.end(), field) != fields.end();
}

[[noreturn]] void shape_change(const std::string& where, const std::string& field, const ordered_json& pretrained,
                               const json& given) {
  throw util::ConfigError(where + ": policy." + field + " = " + given.dump() +
                              " cannot change when fine-tuning: it shapes the pretrained weights (config.json has " +
                              pretrained.dump() + ")",
                          "drop policy." + field +
                              " to keep the pretrained value, or train from scratch without "
                              "policy.pretrained_path");
}

}  // namespace

const std::vector<std::string>& weight_shape_fields(const std::string& type) {
  static const std::vector<std::string> none;
  const auto* spec = find_policy_spec(type);
  return spec ? spec->weight_shape_fields : none;
}

std::set<std::string> explicit_policy_fields(const std::vector<std::string>& overrides) {
  std::set<std::string> fields;
  for (const auto& argument : overrides) {
    const auto [key, value] = config::parse_override(argument);  // lr.config has checked them already
    if (key.starts_with("policy.")) {
      const std::string rest = key.substr(std::string_view("policy.").size());
      fields.insert(rest.substr(0, rest.find('.')));
    } else if (key == "policy") {
      auto table = json::parse(value, nullptr, /*allow_exceptions=*/false);
      if (table.is_object())
        for (const auto& [field, value] : table.items()) fields.insert(field);
    }
  }
  return fields;
}

PretrainedPolicyTable pretrained_policy_table(const json& recipe_policy, const std::set<std::string>& explicit_fields) {
  PretrainedPolicyTable result;
  const std::string path = recipe_policy.at("pretrained_path").get<std::string>();
  result.dir = policy::resolve_pretrained_dir(path);
  const auto config_json = policy::read_policy_config(result.dir);
  const std::string where = (result.dir / kConfigFile).string();
  const std::string type = config_json.value("type", std::string());
  const std::string recipe_type = recipe_policy.value("type", std::string());
  if (!recipe_type.empty() && type != recipe_type)
    throw util::ConfigError(
        "policy.pretrained_path = '" + path + "' is a '" + type + "' policy (" + where + "), and this recipe trains '" +
            recipe_type + "'",
        recipe_that_trains(type) + "; `lrhost lerobot-train --policy.path=" + path + "` picks it for you");
  const auto fields = default_policy_config_with_nulls(type);
  result.policy = json::object();
  for (const auto& [field, value] : recipe_policy.items()) {
    if (recipe_only(field) || run_option(field, type) || explicit_fields.count(field)) {
      result.policy[field] = value;
      if (explicit_fields.count(field) && !recipe_only(field)) result.from_command_line.push_back(field);
    } else if (!config_json.contains(field)) {
      // A field this config.json predates: the policy type's default, as loading config.json alone
      // would give, never the recipe's.
      if (fields.contains(field) && !fields[field].is_null())
        result.policy[field] = json::parse(fields[field].dump());
      else if (!fields.contains(field))
        result.policy[field] = value;
    } else if (!config_json[field].is_null()) {
      result.policy[field] = json::parse(config_json[field].dump());
    }
  }
  result.policy["type"] = type;
  // Check now, so that `lrhost show` refuses what training would.
  apply_policy_changes(config_json, result.policy, where);
  return result;
}

ordered_json apply_policy_changes(ordered_json config_json, const json& changes, const std::string& where) {
  const std::string type = config_json.value("type", std::string());
  const auto fields = default_policy_config_with_nulls(type);
  for (const auto& [field, value] : changes.items()) {
    if (recipe_only(field) || !(config_json.contains(field) || fields.contains(field))) continue;
    // A field config.json cannot hold (lrhost's own, e.g. pi0's geometry) has the type's default there.
    const ordered_json pretrained = config_json.contains(field) ? config_json[field]
                                    : fields.contains(field)    ? ordered_json::parse(fields[field].dump())
                                                                : ordered_json();
    if (!same_kind(pretrained, value))
      throw util::ConfigError(where + ": policy." + field + " = " + value.dump() + " has the wrong type for " +
                              "this field (config.json has " + pretrained.dump() + ")");
    if (json::parse(pretrained.dump()) == value) continue;
    if (shapes_weights(type, field)) shape_change(where, field, pretrained, value);
    config_json[field] = ordered_json::parse(value.dump());
  }
  return config_json;
}

}  // namespace lrhost::policy
