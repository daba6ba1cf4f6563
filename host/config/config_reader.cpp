// Typed, strict reading of component options from JSON.
#include "host/config/config_reader.hpp"

#include <cmath>

#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::config {

using util::ConfigError;

ConfigReader::ConfigReader(const nlohmann::json& table, std::string where) : table_(table), where_(std::move(where)) {
  // An empty Lua table ({}) arrives as an empty list: no options.
  const bool empty_table = table_.is_array() && table_.empty();
  if (!table_.is_object() && !table_.is_null() && !empty_table)
    throw ConfigError(where_ + ": options must be a table, got " + table_.dump());
}

const nlohmann::json* ConfigReader::find(const std::string& key) {
  known_.insert(key);
  if (!table_.is_object()) return nullptr;
  auto it = table_.find(key);
  return it == table_.end() || it->is_null() ? nullptr : &*it;
}

void ConfigReader::fail(const std::string& key, const std::string& expected) const {
  throw ConfigError(where_ + ": '" + key + "' must be " + expected + ", got " + table_.at(key).dump());
}

double ConfigReader::number(const std::string& key, double fallback) {
  const auto* value = find(key);
  if (!value) return fallback;
  if (!value->is_number()) fail(key, "a number");
  return value->get<double>();
}

double ConfigReader::positive_number(const std::string& key, double fallback) {
  double value = number(key, fallback);
  if (!(value > 0)) throw ConfigError(where_ + ": '" + key + "' must be > 0, got " + std::to_string(value));
  return value;
}

int64_t ConfigReader::integer(const std::string& key, int64_t fallback) {
  const auto* value = find(key);
  if (!value) return fallback;
  if (!value->is_number() || std::floor(value->get<double>()) != value->get<double>()) fail(key, "an integer");
  return value->get<int64_t>();
}

int64_t ConfigReader::positive_integer(const std::string& key, int64_t fallback) {
  int64_t value = integer(key, fallback);
  if (value <= 0)
    throw ConfigError(where_ + ": '" + key + "' must be a positive integer, got " + std::to_string(value));
  return value;
}

std::optional<int64_t> ConfigReader::optional_integer(const std::string& key) {
  if (!find(key)) return std::nullopt;
  return integer(key, 0);
}

std::optional<double> ConfigReader::optional_number(const std::string& key) {
  if (!find(key)) return std::nullopt;
  return number(key, 0);
}

bool ConfigReader::boolean(const std::string& key, bool fallback) {
  const auto* value = find(key);
  if (!value) return fallback;
  if (!value->is_boolean()) fail(key, "true or false");
  return value->get<bool>();
}

std::string ConfigReader::string(const std::string& key, const std::string& fallback) {
  const auto* value = find(key);
  if (!value) return fallback;
  if (!value->is_string()) fail(key, "a string");
  return value->get<std::string>();
}

std::string ConfigReader::choice(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& valid) {
  std::string value = string(key, fallback);
  for (const auto& option : valid)
    if (option == value) return value;
  throw ConfigError(where_ + ": '" + key + "' must be one of " + util::quoted_list(valid) + ", got '" + value + "'");
}

std::vector<int64_t> ConfigReader::integer_list(const std::string& key, const std::vector<int64_t>& fallback) {
  const auto* value = find(key);
  if (!value) return fallback;
  if (!value->is_array()) fail(key, "a list of integers");
  std::vector<int64_t> result;
  for (const auto& element : *value) {
    if (!element.is_number_integer()) fail(key, "a list of integers");
    result.push_back(element.get<int64_t>());
  }
  return result;
}

std::vector<double> ConfigReader::number_list(const std::string& key, const std::vector<double>& fallback) {
  const auto* value = find(key);
  if (!value) return fallback;
  if (!value->is_array()) fail(key, "a list of numbers");
  std::vector<double> result;
  for (const auto& element : *value) {
    if (!element.is_number()) fail(key, "a list of numbers");
    result.push_back(element.get<double>());
  }
  return result;
}

void ConfigReader::allow(const std::string& key) {
  known_.insert(key);
}

void ConfigReader::reject_unknown() const {
  if (!table_.is_object()) return;
  std::vector<std::string> valid(known_.begin(), known_.end());
  for (const auto& [key, value] : table_.items()) {
    if (known_.count(key)) continue;
    auto near = util::nearest(key, valid);
    throw ConfigError(where_ + ": unknown option '" + key + "'",
                      (near.empty() ? "valid options: " + util::quoted_list(valid)
                                    : "did you mean " + util::quoted_list(near) + "?"));
  }
}

}  // namespace lrhost::config
