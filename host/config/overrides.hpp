// Command-line overrides of a recipe's config: `key=value` and `a.b.c=value` arguments merged into
// the recipe's defaults. The defaults define the schema: a key that does not exist is an error
// listing the nearest valid keys, and each value is converted to, and checked against, the type of
// its default (number, boolean, string, list, table).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace lrhost::config {

struct Override {
  std::string key;    // dotted path, e.g. "optimizer.lr"
  std::string value;  // raw text after '='
};

// Parses one `key=value` argument; throws util::ConfigError on anything else.
Override parse_override(std::string_view argument);

// Returns `defaults` with every override applied in order (later wins). Throws util::ConfigError
// naming the key, the expected type and the given text.
nlohmann::json apply_overrides(nlohmann::json defaults, const std::vector<Override>& overrides);

// Every dotted key path in a config (tables and leaves), for messages and docs.
std::vector<std::string> key_paths(const nlohmann::json& config);

}  // namespace lrhost::config
