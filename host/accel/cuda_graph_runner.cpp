// The sequencing of a captured training step; see cuda_graph_runner.hpp.
#include "host/accel/cuda_graph_runner.hpp"

#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include "host/util/error.hpp"

namespace lrhost::accel {

CudaGraphRunner::CudaGraphRunner(bool requested, CudaGraphDecision decision, std::unique_ptr<CapturedStep> step,
                                 bool log)
    : requested_(requested), decision_(std::move(decision)), step_(std::move(step)), log_(log) {
  if (decision_.capture != (step_ != nullptr))
    throw std::logic_error("CudaGraphRunner: a step to capture is given exactly when the decision is to capture");
}

std::optional<StepOutputs> CudaGraphRunner::run(const policy::Policy& policy, const optim::Optimizer& optimizer,
                                                double max_norm, const policy::Batch& batch,
                                                const std::function<void()>& eager) {
  if (!step_) throw std::logic_error("CudaGraphRunner::run on a runner that does not capture");
  if (!step_->built_for(policy, optimizer, max_norm))
    throw util::ConfigError(
        "train_step: with accelerator.cuda_graph every call must pass the policy, optimizer and "
        "max_norm of the first (the captured step keeps them); got another one",
        "keep one policy, one optimizer and one clip norm for the run");
  if (step_->captured()) {
    const auto signature = batch_signature(batch);
    if (signature == step_->signature()) return step_->replay(batch);
    if (warned_signatures_.insert(signature).second)
      spdlog::warn(
          "accelerator.cuda_graph: a batch of another shape ({}) than the captured one ({}); such steps "
          "run eagerly",
          signature, step_->signature());
    step_->run_eager(eager);
    return std::nullopt;
  }
  if (eager_steps_ < kWarmupSteps) {
    ++eager_steps_;
    step_->run_eager(eager);
    return std::nullopt;
  }
  std::optional<std::string> failure;
  try {
    step_->capture(batch);
  } catch (const c10::Error& e) {
    failure = e.what_without_backtrace();  // LibTorch's message without its C++ stack
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (failure) {
    step_.reset();
    decision_ = CudaGraphDecision{false, "capture failed: " + *failure};
    // Every process warns: a capture that fails on one rank only is worth seeing.
    spdlog::warn("accelerator.cuda_graph: capturing the training step failed, running eager steps: {}", *failure);
    eager();
    return std::nullopt;
  }
  if (log_)
    spdlog::info(
        "accelerator.cuda_graph: captured the training step after {} eager steps ({} parameters updated "
        "in the graph; batch {})",
        eager_steps_, step_->updated_parameters(), step_->signature());
  return step_->replay(batch);
}

std::string CudaGraphRunner::status() const {
  if (!requested_) return "off";
  if (!decision_.capture) return "eager: " + decision_.reason;
  if (step_ && step_->captured()) return "captured";
  return "warming up";
}

}  // namespace lrhost::accel
