// Recipe options tables -> metrics option structs; see recipe_options.hpp.
#include "host/metrics/recipe_options.hpp"

#include "host/config/config_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::metrics {

TrainingMeterOptions read_training_meter_options(const nlohmann::json& table, const std::string& where) {
  config::ConfigReader reader(table, where);
  TrainingMeterOptions options;
  if (!table.contains("total_steps"))
    throw util::ConfigError(where + ": 'total_steps' is required (the last step of the run)");
  options.total_steps = reader.positive_integer("total_steps", 0);
  options.first_step = reader.positive_integer("first_step", 1);
  options.samples_per_step = reader.integer("samples_per_step", 0);
  if (options.samples_per_step < 0)
    throw util::ConfigError(where + ": 'samples_per_step' must be >= 0, got " +
                            std::to_string(options.samples_per_step));
  if (table.contains("flops_per_sample")) options.flops_per_sample = reader.positive_number("flops_per_sample", 0);
  reader.reject_unknown();
  return options;
}

int64_t read_sink_first_step(const nlohmann::json& table, const std::string& where) {
  config::ConfigReader reader(table, where);
  const int64_t first_step = reader.positive_integer("first_step", 1);
  reader.reject_unknown();
  return first_step;
}

EvalProgressOptions read_eval_progress_options(const nlohmann::json& table, const std::string& where) {
  config::ConfigReader reader(table, where);
  EvalProgressOptions options;
  if (!table.contains("episodes"))
    throw util::ConfigError(where + ": 'episodes' is required (the number of episodes evaluated)");
  options.episodes = reader.positive_integer("episodes", 0);
  options.log_lines = reader.boolean("log_lines", false);
  reader.reject_unknown();
  return options;
}

}  // namespace lrhost::metrics
