// Learning-rate schedules, stepped once per optimizer step. Names and formulas follow the
// Hugging Face `get_scheduler` family that LeRobot's presets use: each group's lr is its initial lr
// times factor(step). Factors:
//   constant                 1
//   constant_with_warmup     step/warmup during warmup, then 1
//   linear_with_warmup       warmup, then linear decay to 0 at total_steps
//   cosine_with_warmup       warmup, then half a cosine from 1 to 0 at total_steps (num_cycles 0.5)
//   cosine_decay_with_warmup LeRobot's CosineDecayWithWarmupSchedulerConfig (pi0, SmolVLA): warmup from
//                            1/(warmup+1) to 1, then a cosine from 1 down to decay_lr_ratio at decay_steps,
//                            flat after. When total_steps < decay_steps both are shrunk as LeRobot's
//                            build() does: warmup = int(warmup·total/decay), decay = total.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "host/optim/optimizer.hpp"

namespace lrhost::optim {

struct ScheduleSpec {
  std::string kind = "constant";
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;  // required by the decaying schedules
  double num_cycles = 0.5;  // cosine only
  // cosine_decay_with_warmup only: the configured decay length and the final lr over the peak lr.
  int64_t decay_steps = 0;
  double decay_lr_ratio = 0.0;

  static ScheduleSpec from_json(const nlohmann::json& table);
  // cosine_decay_with_warmup: the warmup and decay lengths actually used (LeRobot's auto-scaling when
  // the run is shorter than decay_steps); other kinds: warmup_steps and total_steps unchanged.
  std::pair<int64_t, int64_t> effective_warmup_and_decay() const;
  static const std::vector<std::string>& kinds();
  // The lr multiplier after `step` scheduler steps.
  double factor(int64_t step) const;
};

class LrScheduler {
 public:
  // Sets every group's lr to initial_lr * factor(0), as PyTorch's LambdaLR does at construction.
  LrScheduler(Optimizer& optimizer, ScheduleSpec spec);
  // Advances one step. When an accelerator gates the optimizer, a step() that follows no applied
  // optimizer step (accumulation micro-step, skipped fp16 step) does not advance, so the schedule
  // counts optimizer steps whatever the accumulation.
  void step();
  int64_t last_step() const { return step_; }
  // Restores the position (e.g. on resume) and applies its lr.
  void set_step(int64_t step);
  const ScheduleSpec& spec() const { return spec_; }

 private:
  void apply();
  Optimizer& optimizer_;
  ScheduleSpec spec_;
  int64_t step_ = 0;
  int64_t seen_optimizer_steps_ = 0;
};

}  // namespace lrhost::optim
