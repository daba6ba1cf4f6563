// Adam/AdamW inside a captured CUDA graph: ATen's fused kernel (as in fused_adam.hpp) reading the
// learning rate and the step count from device tensors instead of from host numbers, which a graph
// would freeze at their capture-time values. Before each replay the host advances LibTorch's own
// per-parameter step counts (what checkpoints save) and writes them and the groups' current
// learning rates (what schedulers set) into those tensors: two small fills per group, no sync.
// Betas, eps and weight decay are read once, when the update is captured.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace lrhost::optim {

class GraphAdam {
 public:
  // `optimizer` is LibTorch's Adam (decoupled = false) or AdamW (true). Call outside a capture:
  // it allocates the device scalars. Throws ConfigError when a parameter with optimizer state is not
  // on CUDA, or when one group's parameters are at different steps.
  GraphAdam(torch::optim::Optimizer& optimizer, bool decoupled);

  // Inside the capture, after backward: enqueues the update of every parameter that has a gradient
  // and optimizer state (created by the eager warm-up steps). Returns how many it updates; every
  // later replay updates the same ones.
  int64_t enqueue();
  // Before each replay: step += 1 for the captured parameters, and the device scalars refreshed.
  void prepare_replay();

 private:
  struct Group {
    std::vector<torch::Tensor> params, exp_avgs, exp_avg_sqs, steps;
    torch::Tensor step, lr;  // 0-d fp32 on the group's device
    double beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
    int64_t step_count = -1;  // the group's common LibTorch step (-1: no parameter has state yet)
  };
  torch::optim::AdamParamState* state_of(const torch::Tensor& p);

  torch::optim::Optimizer& optimizer_;
  bool decoupled_;
  std::vector<Group> groups_;
};

}  // namespace lrhost::optim
