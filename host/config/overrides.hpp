// Command-line overrides of a recipe's config: `key=value` and `a.b.c=value` arguments merged into
// the recipe's defaults. The defaults define the schema: a key that does not exist is an error
// listing the nearest valid keys, and each value is converted to, and checked against, the type of
// its default (number, boolean, string, list, table). A table the recipe declares as a map
// (`lr.config.map{}`: any keys, e.g. rename_map) is given whole, as a JSON object.
#pragma once
#include <nlohmann/json.hpp>
#include <set>
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
// naming the key, the expected type and the given text. `map_keys` are the dotted paths of the
// tables that are maps: their keys are free (an override replaces the whole map), their values
// scalars of the type of the default's values (any scalar when the default is empty).
nlohmann::json apply_overrides(nlohmann::json defaults, const std::vector<Override>& overrides,
                               const std::set<std::string>& map_keys = {});

// Up to `limit` of `paths` that an unknown `key` may have meant, likeliest first: typos of the whole
// path, then paths with the same words nested differently (optimizer.lr -> policy.optimizer_lr), the
// same leaf elsewhere, the leaf as a word of another leaf, typos of the leaf. Empty when none is close.
std::vector<std::string> suggest_keys(const std::string& key, const std::vector<std::string>& paths,
                                      std::size_t limit = 3);

// Every dotted key path in a config (tables and leaves), for messages and docs.
std::vector<std::string> key_paths(const nlohmann::json& config);

}  // namespace lrhost::config
