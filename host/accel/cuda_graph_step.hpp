// A whole single-process training step (forward, backward, global-norm clipping, Adam/AdamW update)
// captured once in a CUDA graph and replayed for every later batch of the same shapes: one launch
// instead of hundreds of kernel launches and their host-side work. Everything runs on one side
// stream: eager warm-up steps first (they create the optimizer state, cuBLAS workspaces and
// autotuning choices a capture must not allocate), then the capture, then the replays. The batch
// is copied into static input tensors; the loss, its parts and the gradient norm come back from
// static outputs; the learning rate and step count live on the device (optim/graph_adam.hpp).
// Random draws on the device stay random: the capture registers the default CUDA generator, whose
// offset every replay advances. Whether a run may capture at all is decided by
// cuda_graph_plan.hpp and its sequencing (warm-up, capture, fall-back) by cuda_graph_runner.hpp;
// this class only performs it.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "host/optim/optimizer.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::accel {

struct StepOutputs {
  torch::Tensor loss;                          // fp32 scalar
  std::map<std::string, torch::Tensor> parts;  // the policy's loss parts
  torch::Tensor grad_norm;                     // global norm before clipping (undefined without clipping)
};

// What CudaGraphRunner (cuda_graph_runner.hpp) sequences: the one implementation is CudaGraphStep;
// the runner's CPU test gives a stand-in.
class CapturedStep {
 public:
  virtual ~CapturedStep() = default;
  // Runs one ordinary step on the graph's stream (warm-up, or a batch of another signature).
  virtual void run_eager(const std::function<void()>& step) = 0;
  // What the step was built for: a captured graph keeps its policy, optimizer and clip norm.
  virtual bool built_for(const policy::Policy& policy, const optim::Optimizer& optimizer, double max_norm) const = 0;
  // Captures the step with `batch` as its inputs (nothing runs yet; replay(batch) runs it).
  // Throws with CUDA's or LibTorch's reason when the step cannot be captured; the gradients are then
  // cleared so that an eager step can follow.
  virtual void capture(const policy::Batch& batch) = 0;
  virtual bool captured() const = 0;
  virtual const std::string& signature() const = 0;
  virtual int64_t updated_parameters() const = 0;
  // Copies `batch` (the captured signature) into the static inputs and replays the step. The
  // outputs are copies, valid after later replays.
  virtual StepOutputs replay(const policy::Batch& batch) = 0;
};

class CudaGraphStep final : public CapturedStep {
 public:
  // max_norm <= 0: no clipping. The optimizer must be adam or adamw.
  CudaGraphStep(policy::Policy& policy, optim::Optimizer& optimizer, double max_norm, const torch::Device& device);
  ~CudaGraphStep() override;
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;

  void run_eager(const std::function<void()>& step) override;
  bool built_for(const policy::Policy& policy, const optim::Optimizer& optimizer, double max_norm) const override;
  void capture(const policy::Batch& batch) override;
  bool captured() const override { return captured_; }
  const std::string& signature() const override { return signature_; }
  int64_t updated_parameters() const override { return updated_parameters_; }
  StepOutputs replay(const policy::Batch& batch) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool captured_ = false;
  std::string signature_;
  int64_t updated_parameters_ = 0;
};

}  // namespace lrhost::accel
