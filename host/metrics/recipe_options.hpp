// The options tables recipes give the metrics objects (acc:training_meter{...}, acc:eval_progress{...})
// read into their structs, with types checked and unknown keys refused by config::ConfigReader, so
// that the bindings only translate. The fields a recipe cannot set (rank, world size, the status line,
// the device's peak) are the accelerator's to fill in.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "host/metrics/eval_progress.hpp"
#include "host/metrics/training_meter.hpp"

namespace lrhost::metrics {

// {total_steps = N (required), first_step = 1, samples_per_step = 0, flops_per_sample (> 0)}.
TrainingMeterOptions read_training_meter_options(const nlohmann::json& table, const std::string& where);

// A metrics sink's table {first_step = 1} (lr.metrics.jsonl, lr.metrics.tensorboard): the first step
// it records (a resumed run's), >= 1.
int64_t read_sink_first_step(const nlohmann::json& table, const std::string& where);

// {episodes = N (required), log_lines = false}: `log_lines` is the recipe's request (log lines off a
// terminal); Accelerator::eval_progress grants it on the main process only.
EvalProgressOptions read_eval_progress_options(const nlohmann::json& table, const std::string& where);

}  // namespace lrhost::metrics
