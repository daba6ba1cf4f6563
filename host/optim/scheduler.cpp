// Learning-rate schedule formulas and their application to optimizer groups.
#include "host/optim/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "host/config/config_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::optim {

const std::vector<std::string>& ScheduleSpec::kinds() {
  static const std::vector<std::string> names{"constant", "constant_with_warmup", "linear_with_warmup",
                                              "cosine_with_warmup"};
  return names;
}

ScheduleSpec ScheduleSpec::from_json(const nlohmann::json& table) {
  config::ConfigReader reader(table, "scheduler");
  ScheduleSpec spec;
  spec.kind = reader.choice("type", spec.kind, kinds());
  spec.warmup_steps = reader.integer("warmup_steps", 0);
  spec.total_steps = reader.integer("total_steps", 0);
  spec.num_cycles = reader.number("num_cycles", spec.num_cycles);
  reader.reject_unknown();
  if (spec.warmup_steps < 0) throw util::ConfigError("scheduler: 'warmup_steps' must be >= 0");
  bool decays = spec.kind == "linear_with_warmup" || spec.kind == "cosine_with_warmup";
  // A run shorter than its warmup is allowed (it only warms up), as in Hugging Face's get_scheduler;
  // a decaying schedule without its length is a mistake.
  if (decays && spec.total_steps <= 0)
    throw util::ConfigError("scheduler '" + spec.kind + "': 'total_steps' must be positive, got " +
                                std::to_string(spec.total_steps),
                            "pass total_steps = cfg.steps");
  return spec;
}

double ScheduleSpec::factor(int64_t step) const {
  if (kind == "constant") return 1.0;
  if (step < warmup_steps) return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  if (kind == "constant_with_warmup") return 1.0;
  double span = static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  double progress = static_cast<double>(step - warmup_steps) / span;
  if (kind == "linear_with_warmup") return std::max(0.0, 1.0 - progress);
  return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress)));
}

LrScheduler::LrScheduler(Optimizer& optimizer, ScheduleSpec spec)
    : optimizer_(optimizer), spec_(std::move(spec)), seen_optimizer_steps_(optimizer.applied_steps()) {
  apply();
}

void LrScheduler::step() {
  if (optimizer_.gated()) {
    if (optimizer_.applied_steps() == seen_optimizer_steps_) return;
    seen_optimizer_steps_ = optimizer_.applied_steps();
  }
  ++step_;
  apply();
}

void LrScheduler::set_step(int64_t step) {
  if (step < 0) throw util::ConfigError("scheduler: step must be >= 0, got " + std::to_string(step));
  step_ = step;
  apply();
}

void LrScheduler::apply() {
  double f = spec_.factor(step_);
  for (std::size_t g = 0; g < optimizer_.num_groups(); ++g) optimizer_.set_lr(g, optimizer_.initial_lr(g) * f);
}

}  // namespace lrhost::optim
