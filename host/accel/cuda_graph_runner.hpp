// The life of a training step under accelerator.cuda_graph: kWarmupSteps eager steps on the
// graph's stream, the capture, then a replay for every batch of the captured signature (another
// signature runs eagerly, with one warning per signature), and eager steps for good when the
// capture fails. The CUDA work is a CapturedStep's (CudaGraphStep, cuda_graph_step.hpp); the
// sequencing here is plain logic, so that a CPU test drives it with a stand-in step.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "host/accel/cuda_graph_plan.hpp"
#include "host/accel/cuda_graph_step.hpp"

namespace lrhost::accel {

class CudaGraphRunner {
 public:
  static constexpr int64_t kWarmupSteps = 3;

  // `decision`: decide_cuda_graph's verdict; `step`: the step to capture when it says capture
  // (null otherwise); `requested`: accelerator.cuda_graph (only for the status); `log`: this
  // process logs capture and its failures (the main process).
  CudaGraphRunner(bool requested, CudaGraphDecision decision, std::unique_ptr<CapturedStep> step, bool log);

  // Whether steps go through run(): capture was decided and has not failed.
  bool active() const { return step_ != nullptr; }

  // One step of an active runner. `eager` runs an ordinary step (on the graph's stream while the
  // graph lives); the result is the replay's outputs, or nullopt when `eager` ran instead.
  // ConfigError when `policy`, `optimizer` or `max_norm` is not what the step was built for.
  std::optional<StepOutputs> run(const policy::Policy& policy, const optim::Optimizer& optimizer, double max_norm,
                                 const policy::Batch& batch, const std::function<void()>& eager);

  // "off" (not requested), "warming up", "captured", or "eager: <why capture was refused or failed>".
  std::string status() const;

 private:
  bool requested_;
  CudaGraphDecision decision_;
  std::unique_ptr<CapturedStep> step_;
  bool log_;
  int64_t eager_steps_ = 0;
  std::set<std::string> warned_signatures_;
};

}  // namespace lrhost::accel
