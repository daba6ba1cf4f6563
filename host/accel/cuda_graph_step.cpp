// Capture and replay of a training step in a CUDA graph; see cuda_graph_step.hpp.
#include "host/accel/cuda_graph_step.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "host/accel/cuda_graph_plan.hpp"
#include "host/optim/grad_clip.hpp"
#include "host/optim/graph_adam.hpp"
#include "host/util/error.hpp"

namespace lrhost::accel {
namespace {

// While it lives, work goes to `side`, which first waits for what the caller's stream has queued
// (the batch's copy to the device); when it ends, the caller's stream waits for the step. Tensors
// therefore cross between the two streams safely.
class SideStreamScope {
 public:
  explicit SideStreamScope(c10::cuda::CUDAStream side)
      : caller_(c10::cuda::getCurrentCUDAStream(side.device_index())), side_(side), guard_(side) {
    at::cuda::CUDAEvent inputs_ready;
    inputs_ready.record(caller_);
    inputs_ready.block(side_);
  }
  ~SideStreamScope() {
    at::cuda::CUDAEvent step_done;
    step_done.record(side_);
    step_done.block(caller_);
  }
  SideStreamScope(const SideStreamScope&) = delete;
  SideStreamScope& operator=(const SideStreamScope&) = delete;

 private:
  c10::cuda::CUDAStream caller_, side_;
  c10::cuda::CUDAStreamGuard guard_;
};

}  // namespace

struct CudaGraphStep::Impl {
  Impl(policy::Policy& policy_in, optim::Optimizer& optimizer_in, double max_norm_in, const torch::Device& device)
      : policy(policy_in),
        optimizer(optimizer_in),
        max_norm(max_norm_in),
        stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {}

  policy::Policy& policy;
  optim::Optimizer& optimizer;
  double max_norm;
  c10::cuda::CUDAStream stream;
  at::cuda::CUDAGraph graph;
  std::unique_ptr<optim::GraphAdam> adam;
  policy::Batch inputs;  // static: replays read the batch from here
  StepOutputs outputs;   // static: replays write here
};

CudaGraphStep::CudaGraphStep(policy::Policy& policy, optim::Optimizer& optimizer, double max_norm,
                             const torch::Device& device) {
  if (!device.is_cuda()) throw util::ConfigError("a CUDA graph step needs a CUDA device, got " + device.str());
  if (!optim::is_adam_family(optimizer.kind()))
    throw util::ConfigError(std::string("a CUDA graph step needs the adam or adamw optimizer, got ") +
                            optimizer.kind_name());
  impl_ = std::make_unique<Impl>(policy, optimizer, max_norm, device);
}

CudaGraphStep::~CudaGraphStep() = default;

void CudaGraphStep::run_eager(const std::function<void()>& step) {
  SideStreamScope scope(impl_->stream);
  step();
}

bool CudaGraphStep::built_for(const policy::Policy& policy, const optim::Optimizer& optimizer, double max_norm) const {
  return &impl_->policy == &policy && &impl_->optimizer == &optimizer && impl_->max_norm == max_norm;
}

void CudaGraphStep::capture(const policy::Batch& batch) {
  auto& s = *impl_;
  {
    SideStreamScope scope(s.stream);
    for (const auto& [key, tensor] : batch) s.inputs[key] = tensor.clone();
    // Gradients are created inside the capture (in the graph's memory pool), so every replay writes
    // them at the same addresses; the device scalars of the update are allocated before it.
    s.optimizer.torch_optimizer().zero_grad(/*set_to_none=*/true);
    s.adam = std::make_unique<optim::GraphAdam>(s.optimizer.torch_optimizer(),
                                                s.optimizer.kind() == optim::OptimizerKind::adamw);
    // Autocast's cast cache would keep tensors freed between replays; a graph must not use it.
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    try {
      s.graph.capture_begin();
      try {
        auto out = s.policy.run(s.inputs);
        out.loss.backward();
        std::vector<torch::Tensor> grads;
        for (const auto& p : s.optimizer.parameters())
          if (p.grad().defined()) grads.push_back(p.grad());
        if (s.max_norm > 0) s.outputs.grad_norm = optim::clip_grad_norm_foreach(grads, s.max_norm);
        updated_parameters_ = s.adam->enqueue();
        s.outputs.loss = out.loss.detach();
        s.outputs.parts = out.parts;
      } catch (...) {
        try {
          s.graph.capture_end();
        } catch (...) {
        }
        throw;
      }
      s.graph.capture_end();
    } catch (...) {
      at::autocast::set_autocast_cache_enabled(cache);
      s.optimizer.torch_optimizer().zero_grad(/*set_to_none=*/true);
      s.outputs = {};
      throw;
    }
    at::autocast::set_autocast_cache_enabled(cache);
  }
  captured_ = true;
  signature_ = batch_signature(batch);
}

StepOutputs CudaGraphStep::replay(const policy::Batch& batch) {
  if (!captured_) throw util::ConfigError("CudaGraphStep::replay before capture");
  auto& s = *impl_;
  SideStreamScope scope(s.stream);
  torch::NoGradGuard no_grad;
  for (const auto& [key, tensor] : batch) s.inputs.at(key).copy_(tensor, /*non_blocking=*/true);
  s.adam->prepare_replay();
  s.graph.replay();
  s.optimizer.note_captured_step();
  StepOutputs copies;
  copies.loss = s.outputs.loss.clone();
  for (const auto& [name, tensor] : s.outputs.parts) copies.parts[name] = tensor.clone();
  if (s.outputs.grad_norm.defined()) copies.grad_norm = s.outputs.grad_norm.clone();
  return copies;
}

}  // namespace lrhost::accel
