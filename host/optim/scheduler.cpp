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
                                              "cosine_with_warmup", "cosine_decay_with_warmup"};
  return names;
}

ScheduleSpec ScheduleSpec::from_json(const nlohmann::json& table) {
  config::ConfigReader reader(table, "scheduler");
  ScheduleSpec spec;
  spec.kind = reader.choice("type", spec.kind, kinds());
  spec.warmup_steps = reader.integer("warmup_steps", 0);
  spec.total_steps = reader.integer("total_steps", 0);
  spec.num_cycles = reader.number("num_cycles", spec.num_cycles);
  spec.decay_steps = reader.integer("decay_steps", 0);
  spec.decay_lr_ratio = reader.number("decay_lr_ratio", 0.0);
  reader.reject_unknown();
  if (spec.kind == "cosine_decay_with_warmup") {
    if (spec.decay_steps <= 0)
      throw util::ConfigError("scheduler 'cosine_decay_with_warmup': 'decay_steps' must be positive, got " +
                              std::to_string(spec.decay_steps));
    if (!(spec.decay_lr_ratio >= 0))
      throw util::ConfigError(
          "scheduler 'cosine_decay_with_warmup': 'decay_lr_ratio' (decay_lr / peak_lr) must be "
          ">= 0, got " +
          std::to_string(spec.decay_lr_ratio));
    if (spec.total_steps <= 0)
      throw util::ConfigError("scheduler 'cosine_decay_with_warmup': 'total_steps' must be positive, got " +
                                  std::to_string(spec.total_steps),
                              "pass total_steps = cfg.steps (a shorter run shrinks warmup and decay, as LeRobot does)");
  }
  if (spec.warmup_steps < 0) throw util::ConfigError("scheduler: 'warmup_steps' must be >= 0");
  bool decays = spec.kind == "linear_with_warmup" || spec.kind == "cosine_with_warmup";
  // A run shorter than its warmup is allowed (it only warms up), as in Hugging Face's get_scheduler;
  // a decaying schedule without its length is a mistake.
  if (decays && spec.total_steps <= 0)
    throw util::ConfigError(
        "scheduler '" + spec.kind + "': 'total_steps' must be positive, got " + std::to_string(spec.total_steps),
        "pass total_steps = cfg.steps");
  return spec;
}

std::pair<int64_t, int64_t> ScheduleSpec::effective_warmup_and_decay() const {
  if (kind != "cosine_decay_with_warmup" || total_steps <= 0 || total_steps >= decay_steps)
    return {warmup_steps, kind == "cosine_decay_with_warmup" ? decay_steps : total_steps};
  // int(num_warmup_steps * (num_training_steps / num_decay_steps)) in Python's double arithmetic.
  double scale = static_cast<double>(total_steps) / static_cast<double>(decay_steps);
  return {static_cast<int64_t>(static_cast<double>(warmup_steps) * scale), total_steps};
}

double ScheduleSpec::factor(int64_t step) const {
  if (kind == "constant") return 1.0;
  if (kind == "cosine_decay_with_warmup") {
    auto [warmup, decay] = effective_warmup_and_decay();
    if (step < warmup) {
      double start = 1.0 / static_cast<double>(warmup + 1);
      if (step <= 0) return start;
      double frac = 1.0 - static_cast<double>(step) / static_cast<double>(warmup);
      return (start - 1.0) * frac + 1.0;
    }
    double s = static_cast<double>(std::min(step, decay));
    double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * s / static_cast<double>(decay)));
    return (1.0 - decay_lr_ratio) * cosine + decay_lr_ratio;
  }
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
