// Optimizers for recipes: AdamW, Adam and SGD from LibTorch over parameter groups with per-group
// lr / weight decay, plus global gradient-norm clipping. Options are read strictly from the
// recipe's optimizer table (unknown keys are errors).
#pragma once
#include <torch/torch.h>

#include <functional>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/optim/optimizer_kind.hpp"
#include "host/optim/param_group.hpp"

namespace lrhost::optim {

class Optimizer {
 public:
  // kind: "adamw" | "adam" | "sgd" (optimizer_kind.hpp). `options` holds lr, weight_decay, betas, eps, momentum, ...;
  // keys that only the training loop reads (e.g. grad_clip_norm) may be listed in `ignored_keys`.
  Optimizer(const std::string& kind, std::vector<ParamGroup> groups, const nlohmann::json& options,
            const std::vector<std::string>& ignored_keys = {"grad_clip_norm"});

  // Applies one update unless the step hook declines; returns whether it did. First waits for
  // what wait_before_step() registered.
  bool step();
  // The next step() waits for `ready` before it changes any parameter or state: an asynchronous
  // checkpoint is still copying them to host memory on its writer thread, overlapping the forward
  // and backward that come first (ckpt/checkpoint_manager.hpp). A failed copy is the checkpoint's
  // error to report, not the step's.
  void wait_before_step(std::shared_future<void> ready) { pending_reads_.push_back(std::move(ready)); }
  // Clears gradients unless the zero-grad hook declines (mid gradient accumulation).
  void zero_grad();

  // Installed by an accelerator: `before_step` may decline a step (accumulation micro-step,
  // fp16 overflow) and `allow_zero_grad` keeps gradients that are still accumulating.
  void set_step_hooks(std::function<bool(Optimizer&)> before_step, std::function<bool()> allow_zero_grad);
  bool gated() const { return static_cast<bool>(before_step_); }
  int64_t applied_steps() const { return applied_steps_; }
  // Counts an update that a replayed CUDA graph applied (accel/cuda_graph_step.hpp), as step() would.
  void note_captured_step();
  // Runs `callback` after every applied update (step() or a replayed graph's), never after a declined
  // one: the EMA of the weights (weight_ema.hpp) moves once per optimizer step.
  void add_after_step(std::function<void()> callback) { after_step_.push_back(std::move(callback)); }
  // Clips the gradients of every parameter to a global L2 norm; returns the norm before clipping.
  double clip_grad_norm(double max_norm);

  std::size_t num_groups() const { return torch_->param_groups().size(); }
  double lr(std::size_t group) const;
  void set_lr(std::size_t group, double lr);
  // The lr each group had when the optimizer was built (schedulers scale these).
  double initial_lr(std::size_t group) const { return initial_lrs_.at(group); }
  OptimizerKind kind() const { return kind_; }
  const char* kind_name() const { return optimizer_kind_name(kind_); }
  // Adam/AdamW option `fused` (default true): one-pass updates (optim/fused_adam.hpp); false runs
  // LibTorch's own per-operation step on every device, for comparison.
  bool fused() const { return fused_; }
  std::vector<torch::Tensor> parameters() const;
  // Bytes of per-parameter state tensors (Adam moments, SGD momentum) currently allocated.
  int64_t state_bytes() const;
  torch::optim::Optimizer& torch_optimizer() { return *torch_; }

 private:
  void check_group(std::size_t group) const;

  OptimizerKind kind_;
  bool fused_ = false;
  std::unique_ptr<torch::optim::Optimizer> torch_;
  std::vector<double> initial_lrs_;
  std::function<bool(Optimizer&)> before_step_;
  std::function<bool()> allow_zero_grad_;
  int64_t applied_steps_ = 0;
  std::vector<std::function<void()>> after_step_;
  std::vector<std::shared_future<void>> pending_reads_;
};

}  // namespace lrhost::optim
