// Type-checked merging of `key=value` overrides into recipe defaults.
#include "host/config/overrides.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <tuple>

#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::config {
namespace {

using nlohmann::json;
using util::ConfigError;

const char* type_name(const json& value) {
  if (value.is_boolean()) return "boolean";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "list";
  if (value.is_object()) return "table";
  return "null";
}

void collect_paths(const json& node, const std::string& prefix, std::vector<std::string>& out) {
  if (!node.is_object()) return;
  for (const auto& [key, child] : node.items()) {
    std::string path = prefix.empty() ? key : prefix + "." + key;
    out.push_back(path);
    collect_paths(child, path, out);
  }
}

[[noreturn]] void unknown_key(const std::string& key, const json& root) {
  auto suggestions = suggest_keys(key, key_paths(root));
  throw ConfigError("unknown config key '" + key + "'", suggestions.empty()
                                                            ? "run `lrhost show RECIPE` to list the valid keys"
                                                            : "did you mean " + util::quoted_list(suggestions) + "?");
}

[[noreturn]] void wrong_type(const std::string& key, const json& expected, const std::string& text) {
  throw ConfigError("config key '" + key + "' expects a " + type_name(expected) + " (default " + expected.dump() +
                    "), got '" + text + "'");
}

json parse_number(const std::string& key, const json& expected, const std::string& text) {
  if (text.empty()) wrong_type(key, expected, text);
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || std::isnan(value)) wrong_type(key, expected, text);
  // Integral values stay integers so that JSON output reads "steps": 5000, not 5000.0.
  if (std::floor(value) == value && std::fabs(value) < 9.0e15) return static_cast<std::int64_t>(value);
  return value;
}

json parse_boolean(const std::string& key, const json& expected, const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  wrong_type(key, expected, text);
}

// What an override is checked against: the recipe's defaults and which of its tables are maps.
struct Schema {
  const json& root;
  const std::set<std::string>& maps;
};

// Checks a JSON value given for a list/table against its default, recursively for tables.
json check_structured(const std::string& key, const json& expected, const json& given, const Schema& schema);

json convert(const std::string& key, const json& expected, const std::string& text, const Schema& schema) {
  if (expected.is_boolean()) return parse_boolean(key, expected, text);
  if (expected.is_number()) return parse_number(key, expected, text);
  if (expected.is_string()) return text;
  json given = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (given.is_discarded()) {
    if (schema.maps.count(key))
      throw ConfigError("config key '" + key + "' expects a map written as a JSON object, got '" + text + "'",
                        "example: " + key + "='{\"observation.images.top\": \"observation.images.camera1\"}'");
    throw ConfigError(
        "config key '" + key + "' expects a " + type_name(expected) + " written as JSON, got '" + text + "'",
        "example: " + key + "=" + expected.dump());
  }
  return check_structured(key, expected, given, schema);
}

// A map's keys are free; its values are scalars of one type (the default's, when it has values).
json check_map(const std::string& key, const json& expected, const json& given) {
  if (!given.is_object())
    throw ConfigError("config key '" + key + "' expects a map (a JSON object of key: value), got " + given.dump(),
                      "example: " + key + "='{\"from\": \"to\"}'");
  for (const auto& [entry, value] : given.items()) {
    bool scalar = value.is_string() || value.is_number() || value.is_boolean();
    bool same_type = expected.empty() || std::string(type_name(value)) == type_name(expected.begin().value());
    if (!scalar || !same_type)
      throw ConfigError("config key '" + key + "' maps keys to " +
                        (expected.empty() ? std::string("strings, numbers or booleans")
                                          : std::string(type_name(expected.begin().value())) + "s") +
                        ", but '" + entry + "' maps to " + value.dump());
  }
  return given;
}

json check_structured(const std::string& key, const json& expected, const json& given, const Schema& schema) {
  if (schema.maps.count(key)) return check_map(key, expected, given);
  if (expected.is_array()) {
    if (!given.is_array()) wrong_type(key, expected, given.dump());
    // Elements must share the type of the default's elements when the default has any.
    if (!expected.empty())
      for (const auto& element : given)
        if (std::string(type_name(element)) != type_name(expected.front()))
          throw ConfigError("config key '" + key + "' expects a list of " + type_name(expected.front()) + "s, got " +
                            given.dump());
    return given;
  }
  if (expected.is_object()) {
    if (!given.is_object()) wrong_type(key, expected, given.dump());
    json merged = expected;
    for (const auto& [child_key, child_value] : given.items()) {
      std::string path = key + "." + child_key;
      if (!expected.contains(child_key)) unknown_key(path, schema.root);
      const json& child_default = expected.at(child_key);
      if (child_default.is_object() || child_default.is_array())
        merged[child_key] = check_structured(path, child_default, child_value, schema);
      else if (std::string(type_name(child_value)) != type_name(child_default))
        wrong_type(path, child_default, child_value.dump());
      else
        merged[child_key] = child_value;
    }
    return merged;
  }
  wrong_type(key, expected, given.dump());
}

}  // namespace

Override parse_override(std::string_view argument) {
  auto equals = argument.find('=');
  if (equals == std::string_view::npos || equals == 0)
    throw ConfigError("expected a key=value override, got '" + std::string(argument) + "'",
                      "overrides look like steps=500 or optimizer.lr=2e-5");
  Override result{std::string(argument.substr(0, equals)), std::string(argument.substr(equals + 1))};
  for (std::size_t start = 0;;) {
    auto dot = result.key.find('.', start);
    if (dot == start || result.key.empty() || result.key.back() == '.')
      throw ConfigError("malformed override key '" + result.key + "' (empty segment between dots)");
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return result;
}

nlohmann::json apply_overrides(nlohmann::json defaults, const std::vector<Override>& overrides,
                               const std::set<std::string>& map_keys) {
  if (!defaults.is_object()) throw ConfigError("config defaults must be a table of key = value");
  const json root = defaults;  // unknown keys are judged against the recipe's defaults
  const Schema schema{root, map_keys};
  for (const auto& override : overrides) {
    json* node = &defaults;
    const json* expected = &root;
    std::string walked;
    for (std::size_t start = 0;;) {
      auto dot = override.key.find('.', start);
      std::string segment = override.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (map_keys.count(walked))
        throw ConfigError(
            "config key '" + walked + "' is a map: give it whole, as a JSON object, not '" + override.key + "'",
            "example: " + walked + "='{\"" + override.key.substr(walked.size() + 1) + "\": \"" + override.value +
                "\"}'");
      walked += (walked.empty() ? "" : ".") + segment;
      if (!expected->is_object() || !expected->contains(segment)) {
        if (!expected->is_object())
          throw ConfigError("config key '" + walked.substr(0, walked.rfind('.')) + "' is a " + type_name(*expected) +
                            ", it has no field '" + segment + "'");
        unknown_key(override.key, root);
      }
      expected = &expected->at(segment);
      node = &(*node)[segment];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    *node = convert(override.key, *expected, override.value, schema);
  }
  return defaults;
}

namespace {
std::string last_component(const std::string& path) {
  return path.substr(path.rfind('.') + 1);
}

// "optimizer.lr" -> "optimizer_lr": the same words whether nested or flattened into one name.
std::string flattened(std::string path) {
  std::replace(path.begin(), path.end(), '.', '_');
  return path;
}

// Whether `part` appears in `whole` as whole '_'-separated words ("lr" in "optimizer_lr_backbone",
// not in "clr").
bool contains_words(const std::string& whole, const std::string& part) {
  for (std::size_t at = whole.find(part); at != std::string::npos; at = whole.find(part, at + 1)) {
    bool starts = at == 0 || whole[at - 1] == '_';
    bool ends = at + part.size() == whole.size() || whole[at + part.size()] == '_';
    if (starts && ends) return true;
  }
  return false;
}
}  // namespace

std::vector<std::string> suggest_keys(const std::string& key, const std::vector<std::string>& paths,
                                      std::size_t limit) {
  // Ranked by (tier, distance), lower first. Tiers, from most to least likely what was meant:
  //   0  a typo of the whole path (optimizer.lrr -> optimizer.lr)
  //   1  the same words nested differently (optimizer.lr -> policy.optimizer_lr)
  //   2  the same leaf under another table (train.lr -> optimizer.lr)
  //   3  the leaf is a word of another leaf (lr -> policy.optimizer_lr_backbone)
  //   4  a typo of the leaf (polcy.dim_modle -> policy.dim_model)
  //   5  one path contains the other, or is a table above the key (optimizer.lr -> optimizer)
  const std::string leaf = last_component(key), flat = flattened(key);
  std::vector<std::tuple<int, std::size_t, std::size_t, std::string>> ranked;  // tier, distance, order, path
  for (std::size_t order = 0; order < paths.size(); ++order) {
    const std::string& path = paths[order];
    const std::string path_leaf = last_component(path), path_flat = flattened(path);
    const std::size_t distance = util::edit_distance(key, path);
    const std::size_t leaf_distance = util::edit_distance(leaf, path_leaf);
    std::optional<std::pair<int, std::size_t>> score;
    if (key.starts_with(path + "."))  // a table above the key: right place, but not a value to set
      score = {5, distance};
    else if (distance <= std::max<std::size_t>(2, key.size() / 3))
      score = {0, distance};
    else if (path_flat.size() > flat.size() && path_flat.ends_with("_" + flat))
      score = {1, path_flat.size() - flat.size()};
    else if (leaf == path_leaf)
      score = {2, distance};
    else if (leaf.size() >= 2 && contains_words(path_leaf, leaf))
      score = {3, path_leaf.size() - leaf.size()};
    else if (leaf.size() >= 4 && leaf_distance <= std::max<std::size_t>(1, leaf.size() / 4))
      score = {4, leaf_distance};
    else if (path.find(key) != std::string::npos || key.find(path) != std::string::npos)
      score = {5, distance};
    if (score) ranked.emplace_back(score->first, score->second, order, path);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> result;
  for (const auto& entry : ranked) {
    if (result.size() == limit) break;
    result.push_back(std::get<3>(entry));
  }
  return result;
}

std::vector<std::string> key_paths(const nlohmann::json& config) {
  std::vector<std::string> paths;
  collect_paths(config, "", paths);
  return paths;
}

}  // namespace lrhost::config
