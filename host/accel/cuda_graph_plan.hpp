// Whether a training step can be captured in a CUDA graph, decided from plain facts about the run
// so that the decision (and its reason, printed when capture is refused) is testable on a machine
// without a GPU. Capture replays the same kernels on the same addresses every step: anything the
// host decides per step (a loss-scale skip, a divergence skip, host-drawn random numbers, changing
// shapes) or that synchronises with another process (collectives, here) cannot be inside it.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "host/accel/mixed_precision.hpp"
#include "host/accel/nonfinite_guard.hpp"
#include "host/optim/optimizer_kind.hpp"

namespace lrhost::accel {

struct CudaGraphRequest {
  bool requested = false;  // accelerator.cuda_graph
  bool cuda = false;       // the accelerator's device is a GPU
  int world_size = 1;      // ranks in the job
  bool sharded = false;    // FSDP (even on one rank: it frees and refills parameter storage)
  int64_t gradient_accumulation_steps = 1;
  MixedPrecision mixed_precision = MixedPrecision::no;
  NonfinitePolicy nonfinite = NonfinitePolicy::error;
  optim::OptimizerKind optimizer_kind = optim::OptimizerKind::adamw;
  // Why the policy's training forward cannot be replayed (host-side randomness, host reads,
  // data-dependent shapes), or nullopt when it can: Policy::cuda_graph_blocker().
  std::optional<std::string> policy_blocker;
};

struct CudaGraphDecision {
  bool capture = false;
  std::string reason;  // why not (empty when capture is true or it was not requested)
};

CudaGraphDecision decide_cuda_graph(const CudaGraphRequest& request);

// The shapes and dtypes of a batch, "action:f32[8,100,14] observation.state:f32[8,14] ...": a
// captured step replays only batches with the signature it was captured with.
std::string batch_signature(const std::map<std::string, torch::Tensor>& batch);

}  // namespace lrhost::accel
