// The divergence guard: an optimizer step whose loss (on any rank) or global gradient norm is not
// finite never updates the parameters, and every rank reaches the same verdict on the same step.
// The check rides on reductions each step runs anyway: a non-finite local loss multiplies the
// backward seed by NaN, so the gradient all-reduce (DDP) or reduce-scatter plus norm all-reduce
// (FSDP) carry it to every rank, and the global gradient norm, which every rank holds identically,
// is the verdict. Only a step that failed pays one more tiny collective, to tell every rank which
// metric failed and where. Default policy: stop with an error naming the step, the metric, its
// value and the last good checkpoint; "skip" drops such steps (as a GradScaler drops overflowing
// ones) up to max_skipped_steps, after which it stops with the same error.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "host/dist/comm.hpp"
#include "host/util/name_table.hpp"

namespace lrhost::accel {

enum class NonfinitePolicy { error, skip };
inline constexpr util::NameTable kNonfinitePolicyNames{
    std::array{std::pair{NonfinitePolicy::error, "error"}, std::pair{NonfinitePolicy::skip, "skip"}}};

// What was not finite in one step; identical on every rank.
struct Divergence {
  std::string metric;  // "loss" or "gradient norm"
  double value = 0;    // the loss of the first rank whose loss was not finite, or the global gradient norm
  int rank = -1;       // that rank (-1 for the gradient norm, a global figure)
  // "the loss is nan on rank 1" / "the gradient norm is inf"
  std::string describe() const;
};

class NonfiniteGuard {
 public:
  NonfiniteGuard(NonfinitePolicy policy, int64_t max_skipped_steps);

  // Called by every backward. `cycle_start`: the first micro-step of an accumulation cycle (one
  // optimizer step), which starts a fresh record. Returns what to backpropagate: `loss` itself when
  // it is finite, `loss` times NaN otherwise, so this rank's gradient contribution is non-finite
  // and the step's gradient reductions spread the verdict to every rank. No host sync.
  torch::Tensor watch_loss(const torch::Tensor& loss, bool cycle_start);
  // 1 when this rank's loss was not finite in the current cycle, else 0 (float64, on the loss's
  // device; undefined before the first backward). For folding into another reduction (fp16).
  torch::Tensor local_loss_flag() const { return loss_flag_; }

  // Collective: every rank calls it on the same step, once the agreed reductions showed that step
  // is not finite. Finds which metric failed: some rank's loss, else the gradient norm `grad_norm`.
  Divergence diagnose(dist::Comm& comm, const torch::Device& device, double grad_norm) const;
  // Applies the policy to a diverged step: throws util::Error (error policy, or one skipped step
  // more than max_skipped_steps) or counts the skip and warns (on the main process).
  void handle(const Divergence& divergence, bool main_process);

  // Counts a step that did not pass through watch_loss (one replayed from a CUDA graph).
  void count_step() { ++cycles_; }
  NonfinitePolicy policy() const { return policy_; }
  int64_t max_skipped_steps() const { return max_skipped_steps_; }
  int64_t skipped_steps() const { return skipped_steps_; }
  // The recipe's number for the current (or, between steps, the last) optimizer step.
  int64_t current_step() const { return step_base_ + cycles_; }
  // Numbers the next optimizer step `step` (a resumed run's first step is resume_step + 1); call it
  // between steps, before the step's first backward. Without it steps count from 1.
  void set_next_step(int64_t step) { step_base_ = step - 1 - cycles_; }
  // The last checkpoint saved from finite state, named in the error.
  void set_last_checkpoint(std::string dir) { last_checkpoint_ = std::move(dir); }

 private:
  std::string error_message(const Divergence& divergence) const;

  NonfinitePolicy policy_;
  int64_t max_skipped_steps_;
  int64_t skipped_steps_ = 0;
  int64_t cycles_ = 0;  // accumulation cycles started, i.e. optimizer steps so far
  int64_t step_base_ = 0;
  std::optional<std::string> last_checkpoint_;
  torch::Tensor loss_flag_;  // [1] float64: max over the cycle's micro-steps of "not finite"
  torch::Tensor loss_sum_;   // [1] float64: sum of the cycle's micro-step losses (for the message)
};

}  // namespace lrhost::accel
