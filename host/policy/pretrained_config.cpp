// PreTrainedConfig's shared parts: strict reading of null-able values, features and the
// normalization mapping, their config.json form, and the feature properties.
#include "host/policy/pretrained_config.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {

using util::ConfigError;

PolicyFieldReader::PolicyFieldReader(config::ConfigReader& reader, const nlohmann::json& table, std::string where)
    : reader_(reader), table_(table), where_(std::move(where)) {}

void PolicyFieldReader::expect_type(const std::string& type) {
  if (table_.is_object() && table_.contains("type") && table_["type"] != type)
    throw ConfigError(where_ + ": 'type' must be \"" + type + "\", got " + table_["type"].dump());
  reader_.allow("type");
}

void PolicyFieldReader::wrong_type(const std::string& key, const std::string& expected,
                                   const nlohmann::json& value) const {
  throw ConfigError(where_ + ": '" + key + "' must be " + expected + ", got " + value.dump());
}

const nlohmann::json* PolicyFieldReader::nullable(const std::string& key) {
  reader_.allow(key);
  if (!table_.is_object()) return nullptr;
  auto it = table_.find(key);
  return it == table_.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::string> PolicyFieldReader::optional_string(const std::string& key) {
  const auto* value = nullable(key);
  if (!value) return std::nullopt;
  if (!value->is_string()) wrong_type(key, "a string or null", *value);
  return value->get<std::string>();
}

std::optional<bool> PolicyFieldReader::optional_bool(const std::string& key) {
  const auto* value = nullable(key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) wrong_type(key, "true, false or null", *value);
  return value->get<bool>();
}

std::optional<double> PolicyFieldReader::optional_number(const std::string& key) {
  const auto* value = nullable(key);
  if (!value) return std::nullopt;
  if (!value->is_number()) wrong_type(key, "a number or null", *value);
  return value->get<double>();
}

std::optional<int64_t> PolicyFieldReader::optional_integer(const std::string& key) {
  const auto* value = nullable(key);
  if (!value) return std::nullopt;
  if (!value->is_number() || std::floor(value->get<double>()) != value->get<double>())
    wrong_type(key, "an integer or null", *value);
  return value->get<int64_t>();
}

std::optional<std::vector<std::string>> PolicyFieldReader::optional_strings(const std::string& key) {
  const auto* value = nullable(key);
  if (!value) return std::nullopt;
  if (!value->is_array()) wrong_type(key, "a list of strings or null", *value);
  std::vector<std::string> result;
  for (const auto& element : *value) {
    if (!element.is_string()) wrong_type(key, "a list of strings or null", *value);
    result.push_back(element.get<std::string>());
  }
  return result;
}

bool PolicyFieldReader::bool_or_int(const std::string& key, bool fallback) {
  const auto* value = nullable(key);
  if (!value) return fallback;
  if (value->is_boolean()) return value->get<bool>();
  if (value->is_number_integer() && (value->get<int64_t>() == 0 || value->get<int64_t>() == 1))
    return value->get<int64_t>() == 1;
  wrong_type(key, "true, false, 0 or 1", *value);
}

std::vector<PolicyFeature> PolicyFieldReader::features(const std::string& key,
                                                       const std::vector<PolicyFeature>& fallback) {
  const auto* value = nullable(key);
  if (!value || (value->is_object() && value->empty())) return fallback;
  return PolicyFeatures::list_from_json(nlohmann::ordered_json(*value), where_ + ": '" + key + "'");
}

NormalizationMapping PolicyFieldReader::normalization_mapping(const std::string& key,
                                                              const NormalizationMapping& fallback) {
  // LeRobot's FeatureType and NormalizationMode values.
  static const std::vector<std::string> feature_types{"STATE", "VISUAL", "ENV", "ACTION", "REWARD", "LANGUAGE"};
  static const std::vector<std::string> modes{"MIN_MAX", "MEAN_STD", "IDENTITY", "QUANTILES", "QUANTILE10"};
  const auto* value = nullable(key);
  if (!value) return fallback;
  if (!value->is_object()) wrong_type(key, "a table {feature type: normalization mode}", *value);
  std::map<std::string, std::string> parsed;
  for (const auto& [type, mode] : value->items()) {
    if (std::find(feature_types.begin(), feature_types.end(), type) == feature_types.end())
      throw ConfigError(where_ + ": '" + key + "' has unknown feature type '" + type + "'",
                        "feature types: " + util::quoted_list(feature_types));
    if (!mode.is_string() || std::find(modes.begin(), modes.end(), mode.get<std::string>()) == modes.end())
      throw ConfigError(where_ + ": '" + key + "." + type + "' must be one of " + util::quoted_list(modes) + ", got " +
                        mode.dump());
    parsed[type] = mode.get<std::string>();
  }
  NormalizationMapping result;
  auto take = [&](const std::string& type) {
    auto it = parsed.find(type);
    if (it == parsed.end()) return;
    result.emplace_back(type, it->second);
    parsed.erase(it);
  };
  for (const auto& entry : fallback) take(entry.first);
  for (const auto& type : feature_types) take(type);
  return result;
}

const PolicyFeature* PretrainedConfigFields::robot_state_feature() const {
  for (const auto& f : input_features)
    if (f.type == "STATE" && f.key == "observation.state") return &f;
  return nullptr;
}

const PolicyFeature* PretrainedConfigFields::env_state_feature() const {
  for (const auto& f : input_features)
    if (f.type == "ENV") return &f;
  return nullptr;
}

std::vector<PolicyFeature> PretrainedConfigFields::image_features() const {
  std::vector<PolicyFeature> result;
  for (const auto& f : input_features)
    if (f.type == "VISUAL") result.push_back(f);
  return result;
}

const PolicyFeature* PretrainedConfigFields::action_feature() const {
  for (const auto& f : output_features)
    if (f.type == "ACTION" && f.key == "action") return &f;
  return nullptr;
}

nlohmann::ordered_json normalization_mapping_json(const NormalizationMapping& mapping) {
  auto result = nlohmann::ordered_json::object();
  for (const auto& [type, mode] : mapping) result[type] = mode;
  return result;
}

}  // namespace lrhost::policy
