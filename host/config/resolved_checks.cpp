// Checks of the resolved config shared by all recipes; see resolved_checks.hpp.
#include "host/config/resolved_checks.hpp"

#include <cmath>

#include "host/util/error.hpp"

namespace lrhost::config {

void check_resolved_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("steps")) return;
  const nlohmann::json& steps = config["steps"];
  if (!steps.is_number()) return;  // a recipe may use the name for something else; overrides check types
  double value = steps.get<double>();
  if (value >= 1 && std::floor(value) == value) return;
  throw util::ConfigError("config key 'steps' must be a whole number >= 1, got " + steps.dump(),
                          "steps is the number of optimizer steps to train, e.g. steps=1000");
}

}  // namespace lrhost::config
