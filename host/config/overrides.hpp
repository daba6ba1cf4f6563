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

// Up to `limit` of `paths` that an unknown `key` may have meant, likeliest first: typos of the whole
// path, then paths with the same words nested differently (optimizer.lr -> policy.optimizer_lr), the
// same leaf elsewhere, the leaf as a word of another leaf, typos of the leaf. Empty when none is close.
std::vector<std::string> suggest_keys(const std::string& key, const std::vector<std::string>& paths,
                                      std::size_t limit = 3);

// Every dotted key path in a config (tables and leaves), for messages and docs.
std::vector<std::string> key_paths(const nlohmann::json& config);

}  // namespace lrhost::config
