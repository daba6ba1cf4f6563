// Rules every resolved recipe config must follow whatever the recipe's defaults say, checked by
// lr.config after the overrides and the recipe's derive function: values no recipe can run with
// (steps = 0 would finish at once and save nothing) fail here with the key named, not later.
#pragma once
#include <nlohmann/json.hpp>

namespace lrhost::config {

// Throws util::ConfigError for a top-level numeric `steps` that is not a whole number >= 1.
void check_resolved_config(const nlohmann::json& config);

}  // namespace lrhost::config
