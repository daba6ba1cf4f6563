// Capturable fused Adam/AdamW; see graph_adam.hpp.
#include "host/optim/graph_adam.hpp"

#include "host/util/error.hpp"

namespace lrhost::optim {

torch::optim::AdamParamState* GraphAdam::state_of(const torch::Tensor& p) {
  auto& states = optimizer_.state();
  auto found = states.find(p.unsafeGetTensorImpl());
  if (found == states.end()) return nullptr;
  return static_cast<torch::optim::AdamParamState*>(found->second.get());
}

GraphAdam::GraphAdam(torch::optim::Optimizer& optimizer, bool decoupled)
    : optimizer_(optimizer), decoupled_(decoupled) {
  for (std::size_t g = 0; g < optimizer_.param_groups().size(); ++g) {
    auto& torch_group = optimizer_.param_groups()[g];
    Group group;
    // AdamOptions and AdamWOptions have the same accessors; read them through the right type.
    auto read = [&](const auto& o) {
      group.beta1 = std::get<0>(o.betas()), group.beta2 = std::get<1>(o.betas());
      group.eps = o.eps(), group.weight_decay = o.weight_decay();
      if (o.amsgrad()) throw util::ConfigError("a CUDA graph step does not support amsgrad");
    };
    if (decoupled)
      read(static_cast<const torch::optim::AdamWOptions&>(torch_group.options()));
    else
      read(static_cast<const torch::optim::AdamOptions&>(torch_group.options()));
    torch::Device device(torch::kCPU);
    for (const auto& p : torch_group.params()) {
      auto* state = state_of(p);
      if (state == nullptr) continue;
      if (!p.is_cuda())
        throw util::ConfigError("a CUDA graph step needs every optimized parameter on the GPU; one is on " +
                                p.device().str());
      if (group.step_count >= 0 && state->step() != group.step_count)
        throw util::ConfigError("parameter group " + std::to_string(g + 1) + " has parameters at steps " +
                                std::to_string(group.step_count) + " and " + std::to_string(state->step()) +
                                "; a CUDA graph step updates a group with one step count");
      group.step_count = state->step();
      device = p.device();
    }
    if (group.step_count >= 0) {
      auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
      group.step = torch::zeros({}, options);
      group.lr = torch::zeros({}, options);
    }
    groups_.push_back(std::move(group));
  }
}

int64_t GraphAdam::enqueue() {
  torch::NoGradGuard no_grad;
  int64_t count = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto& group = groups_[g];
    if (group.step_count < 0) continue;
    std::vector<torch::Tensor> grads;
    for (const auto& p : optimizer_.param_groups()[g].params()) {
      auto* state = state_of(p);
      if (state == nullptr || !p.grad().defined()) continue;
      group.params.push_back(p);
      grads.push_back(p.grad());
      group.exp_avgs.push_back(state->exp_avg());
      group.exp_avg_sqs.push_back(state->exp_avg_sq());
      group.steps.push_back(group.step);
    }
    if (group.params.empty()) continue;
    if (decoupled_)
      at::_fused_adamw_(group.params, grads, group.exp_avgs, group.exp_avg_sqs, {}, group.steps, group.lr, group.beta1,
                        group.beta2, group.weight_decay, group.eps, /*amsgrad=*/false, /*maximize=*/false);
    else
      at::_fused_adam_(group.params, grads, group.exp_avgs, group.exp_avg_sqs, {}, group.steps, group.lr, group.beta1,
                       group.beta2, group.weight_decay, group.eps, /*amsgrad=*/false, /*maximize=*/false);
    count += static_cast<int64_t>(group.params.size());
  }
  return count;
}

void GraphAdam::prepare_replay() {
  torch::NoGradGuard no_grad;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto& group = groups_[g];
    if (group.params.empty()) continue;
    // An eager step in between (a batch of another shape) advanced the states too: follow them.
    group.step_count = state_of(group.params.front())->step() + 1;
    for (const auto& p : group.params) state_of(p)->step(group.step_count);
    group.step.fill_(static_cast<double>(group.step_count));
    group.lr.fill_(optimizer_.param_groups()[g].options().get_lr());
  }
}

}  // namespace lrhost::optim
