// The divergence guard: loss watching (NaN-poisoned backward seed), the failure-path diagnosis
// collective, and the error / skip policy with its messages.
#include "host/accel/nonfinite_guard.hpp"

#include <cmath>
#include <limits>

#include "host/util/error.hpp"

namespace lrhost::accel {

namespace {

// "nan", "inf", "-inf" or the number (fmt would print a negative NaN as "-nan").
std::string format_value(double value) {
  if (std::isnan(value)) return "nan";
  return fmt::format("{:.6g}", value);
}

}  // namespace

std::string Divergence::describe() const {
  std::string text = "the " + metric + " is " + format_value(value);
  if (rank >= 0) text += " on rank " + std::to_string(rank);
  return text;
}

NonfiniteGuard::NonfiniteGuard(NonfinitePolicy policy, int64_t max_skipped_steps)
    : policy_(policy), max_skipped_steps_(max_skipped_steps) {}

torch::Tensor NonfiniteGuard::watch_loss(const torch::Tensor& loss, bool cycle_start) {
  torch::Tensor factor;
  {
    torch::NoGradGuard no_grad;
    auto value = loss.detach().reshape({1}).to(torch::kFloat64);
    auto not_finite = torch::isfinite(value).logical_not();
    if (cycle_start || !loss_flag_.defined()) {
      ++cycles_;
      loss_flag_ = not_finite.to(torch::kFloat64);
      loss_sum_ = value;
    } else {
      loss_flag_ = torch::maximum(loss_flag_, not_finite.to(torch::kFloat64));
      loss_sum_ = loss_sum_ + value;
    }
    // 1 where finite, NaN where not: multiplying by exactly 1 leaves a finite loss's gradients bit
    // for bit unchanged.
    factor = torch::where(not_finite, std::numeric_limits<double>::quiet_NaN(), 1.0)
                 .to(loss.scalar_type())
                 .reshape(loss.sizes());
  }
  return loss * factor;
}

Divergence NonfiniteGuard::diagnose(dist::Comm& comm, const torch::Device& device, double grad_norm) const {
  auto options = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  auto local = torch::zeros({2}, options);
  if (loss_flag_.defined()) local = torch::cat({loss_flag_, loss_sum_}).to(device);
  auto all = torch::empty({2 * comm.size()}, options);
  comm.all_gather_into(all, local);
  auto values = all.cpu();
  auto read = values.accessor<double, 1>();
  for (int r = 0; r < comm.size(); ++r)
    if (read[2 * r] > 0.5) return Divergence{"loss", read[2 * r + 1], r};
  return Divergence{"gradient norm", grad_norm, -1};
}

std::string NonfiniteGuard::error_message(const Divergence& divergence) const {
  std::string message = "training diverged at step " + std::to_string(current_step()) + ": " + divergence.describe();
  if (policy_ == NonfinitePolicy::skip)
    message += ", the " + std::to_string(skipped_steps_ + 1) + " non-finite steps so far are more than " +
               "accelerator.max_skipped_steps = " + std::to_string(max_skipped_steps_) + " allows";
  message += ". The update was not applied; ";
  message += last_checkpoint_ ? "last good checkpoint: " + *last_checkpoint_
                              : "no checkpoint of this run was reported before it (recipes report theirs with "
                                "acc:guard_context{checkpoint = dir})";
  return message;
}

void NonfiniteGuard::handle(const Divergence& divergence, bool main_process) {
  if (policy_ == NonfinitePolicy::error || skipped_steps_ >= max_skipped_steps_)
    throw util::Error(error_message(divergence),
                      policy_ == NonfinitePolicy::error
                          ? "resume from the last good checkpoint with a lower learning rate or stronger gradient "
                            "clipping, or set accelerator.nonfinite = \"skip\" to drop such steps (at most "
                            "accelerator.max_skipped_steps of them)"
                          : "resume from the last good checkpoint with a lower learning rate or stronger gradient "
                            "clipping; steps that keep diverging are not fixed by skipping them");
  ++skipped_steps_;
  if (main_process)
    spdlog::warn("step {} skipped: {} (no update, gradients cleared; {} of at most {} skipped steps)", current_step(),
                 divergence.describe(), skipped_steps_, max_skipped_steps_);
}

}  // namespace lrhost::accel
