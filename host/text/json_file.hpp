// A tokenizer JSON file (tokenizer.json, tokenizer_config.json) being read: typed accessors that name the
// file and the JSON key in every error, shared by the loaders of both tokenizer families.
#pragma once
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "host/util/error.hpp"

namespace lrhost::text::detail {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads and checks one JSON file, naming it in every error.
class JsonFile {
 public:
  JsonFile(fs::path path, json root) : path_(std::move(path)), root_(std::move(root)) {}
  static JsonFile read(const fs::path& path) {
    std::ifstream stream(path, std::ios::binary);
    if (!stream) throw util::IoError(fmt::format("cannot read {}", path.string()));
    std::stringstream text;
    text << stream.rdbuf();
    try {
      return JsonFile(path, json::parse(text.str()));
    } catch (const json::exception& error) {  // parse_error, and out_of_range for a number beyond double
      throw util::DataError(fmt::format("{}: malformed JSON: {}", path.string(), error.what()));
    }
  }
  const json& root() const { return root_; }
  const fs::path& path() const { return path_; }

  [[noreturn]] void fail(const std::string& key, const json& value, const std::string& why,
                         const std::string& hint = {}) const {
    std::string shown = value.dump();
    if (shown.size() > 120) shown = shown.substr(0, 117) + "...";
    throw util::DataError(fmt::format("{}: {} = {}: {}", path_.string(), key, shown, why), hint);
  }
  [[noreturn]] void missing(const std::string& key, const std::string& expected) const {
    throw util::DataError(fmt::format("{}: {} is missing (expected {})", path_.string(), key, expected));
  }
  // The member `name` of `object` (at `key`), checked to be of the expected kind.
  const json& member(const json& object, const std::string& key, const char* name) const {
    if (!object.is_object()) fail(key, object, "expected an object");
    auto found = object.find(name);
    if (found == object.end()) missing(key + "." + name, "a value");
    return *found;
  }
  std::string string_at(const json& object, const std::string& key, const char* name) const {
    const json& value = member(object, key, name);
    if (!value.is_string()) fail(key + "." + name, value, "expected a string");
    return value.get<std::string>();
  }
  bool bool_at(const json& object, const std::string& key, const char* name, std::optional<bool> fallback = {}) const {
    if (fallback && (!object.contains(name) || object[name].is_null())) return *fallback;
    const json& value = member(object, key, name);
    if (!value.is_boolean()) fail(key + "." + name, value, "expected true or false");
    return value.get<bool>();
  }

 private:
  fs::path path_;
  json root_;
};

}  // namespace lrhost::text::detail
