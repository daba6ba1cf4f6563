// The FSDP engine: per-unit gather / reshard / reduce-scatter driven by forward hooks, tensor hooks
// on unit outputs (pre-backward) and post-accumulate-grad hooks on parameters (post-backward).
// This file is the wiring: which unit gathers, prefetches, reshards and reduces when, in an order
// every rank shares. A unit's work is in fsdp_param_group.hpp, one parameter's in fsdp_param.hpp
// (including the model of parameter states), the collectives in fsdp_collectives.hpp and the whole-
// model views (state dict, memory) in fsdp_state_dict.hpp.
#include "host/dist/fsdp/fsdp_engine.hpp"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>

#include "host/dist/fsdp/fsdp_collectives.hpp"
#include "host/dist/fsdp/fsdp_param_group.hpp"
#include "host/dist/fsdp/fsdp_state_dict.hpp"
#include "host/dist/fsdp/wrap_units.hpp"
#include "host/nn/forward_hooks.hpp"

namespace lrhost::dist::fsdp {

class FsdpEngine::Impl : public policy::ShardedStateSource {
 public:
  Impl(policy::Policy& policy, const FsdpOptions& options, std::shared_ptr<Comm> world, ShardingView& view, bool& sync)
      : policy_(policy),
        options_(options),
        comms_(make_fsdp_comms(std::move(world), options_.shard_size, options_.replicate_size)),
        view_(view),
        sync_(sync) {
    view_.shard_size = comms_.shard_size;
    view_.replicate_size = comms_.replicate_size;
    view_.shard_rank = comms_.shard_rank;
    view_.replicate_rank = comms_.replicate_rank;
    auto found = find_wrap_units(policy, options.wrap_modules);
    torch::NoGradGuard no_grad;
    for (const auto& wrap : found) {
      std::vector<std::size_t> unit_groups;
      for (const auto& spec : param_groups(wrap)) {
        unit_groups.push_back(groups_.size());
        // A parameter loaded with a cast takes its rows from the file's tensor (policy.hpp, add_file_cast).
        groups_.push_back(std::make_unique<FsdpParamGroup>(
            wrap, spec, comms_, options.param_dtype, options.device,
            [&policy](const torch::Tensor& param) { return policy.take_file_cast(param); }));
        view_.units.push_back(groups_.back()->layout());
      }
      nn::set_forward_hooks(*wrap.module, std::make_shared<UnitHooks>(this, unit_groups));
      hooked_modules_.push_back(wrap.module);
    }
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      auto& group = *groups_[g];
      if (group.frozen()) continue;
      for (std::size_t i = 0; i < group.params().size(); ++i)
        torch::autograd::impl::set_post_acc_grad_hooks(group.params()[i].param(),
                                                       std::make_unique<GradReadyHook>(this, g, i));
    }
    total_parameters_ = count_full_parameters(policy, groups_);
    policy.set_sharded_state_source(this);
  }

  ~Impl() override {
    policy_.set_sharded_state_source(nullptr);
    for (auto* module : hooked_modules_) nn::set_forward_hooks(*module, nullptr);
    for (auto& group : groups_)
      if (!group->frozen())
        for (const auto& p : group->params()) torch::autograd::impl::post_acc_grad_hooks(p.param()).reset();
  }

  // --- forward / backward hooks -------------------------------------------------------------
  // One module's hooks drive all of its parameter groups (trainable / frozen, per dtype).
  struct UnitHooks final : nn::ForwardHooks {
    UnitHooks(Impl* impl, std::vector<std::size_t> groups) : impl(impl), groups(std::move(groups)) {}
    void pre_forward() override { impl->pre_forward(groups); }
    void post_forward(const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs) override {
      impl->post_forward(groups, inputs, outputs);
    }
    Impl* impl;
    std::vector<std::size_t> groups;
  };

  struct GradReadyHook final : torch::autograd::PostAccumulateGradHook {
    GradReadyHook(Impl* impl, std::size_t group, std::size_t param) : impl(impl), group(group), param(param) {}
    void operator()(const torch::autograd::Variable&) override { impl->on_grad_ready(group, param); }
    Impl* impl;
    std::size_t group, param;
  };

  void pre_forward(const std::vector<std::size_t>& unit) {
    bool training = torch::GradMode::is_enabled();
    for (auto g : unit) {
      if (!training) continue;
      if (std::find(forward_order_.begin(), forward_order_.end(), g) == forward_order_.end())
        forward_order_.push_back(g);
      // Gradients left from an earlier step (not zeroed) are shard-shaped: set them aside so
      // autograd accumulates this backward's unsharded gradients from scratch.
      groups_[g]->stash_shard_grads();
    }
    for (auto g : unit) groups_[g]->start_gather();
    for (auto g : unit) groups_[g]->gather();
    if (training) prefetch_after(unit.back(), +1);
  }

  void post_forward(const std::vector<std::size_t>& unit, const std::vector<torch::Tensor>& inputs,
                    const std::vector<torch::Tensor>& outputs) {
    bool needs_backward = torch::GradMode::is_enabled() &&
                          std::any_of(outputs.begin(), outputs.end(),
                                      [](const torch::Tensor& t) { return t.defined() && t.requires_grad(); });
    if (!needs_backward) {
      for (auto g : unit) groups_[g]->reshard();
      return;
    }
    // The root's parameters are used again right at the start of backward. Frozen groups stay
    // gathered (ZeRO-2) or are gathered again (ZeRO-3) until the unit's backward is over.
    if (groups_[unit.front()]->is_root()) return;
    free_frozen_after_backward(unit, inputs);
    if (!options_.reshard_after_forward) return;
    for (auto g : unit) groups_[g]->free_after_forward();
    for (const auto& output : outputs) {
      if (!output.defined() || !output.requires_grad()) continue;
      auto hook_output = output;
      hook_output.register_hook([this, unit](const torch::Tensor&) { pre_backward(unit); });
    }
  }

  // A frozen group has no gradient to tell when backward is done with it. The gradients of the
  // unit's inputs do: every backward node of the unit that reads the frozen weights lies on a path
  // to an input that requires grad, so once all those inputs' gradients are computed, the unit's
  // backward is over. Call sites that name no inputs keep frozen groups until the end of backward.
  void free_frozen_after_backward(const std::vector<std::size_t>& unit, const std::vector<torch::Tensor>& inputs) {
    std::vector<std::size_t> frozen;
    for (auto g : unit)
      if (groups_[g]->frozen()) frozen.push_back(g);
    if (frozen.empty()) return;
    std::vector<torch::Tensor> tracked;
    for (const auto& input : inputs)
      if (input.defined() && input.requires_grad()) tracked.push_back(input);
    if (tracked.empty()) return;
    auto pending = std::make_shared<std::size_t>(tracked.size());
    for (auto& input : tracked)
      input.register_hook([this, frozen, pending](const torch::Tensor&) {
        if (--*pending > 0) return;
        for (auto g : frozen) groups_[g]->reshard();
      });
  }

  void pre_backward(const std::vector<std::size_t>& unit) {
    queue_final_callback();
    for (auto g : unit) {
      auto& group = *groups_[g];
      // A frozen group another call's backward already resharded is gathered again: its params point
      // at their shards then, while autograd still holds views of the unsharded storage.
      if (group.state() == ParamState::freed || (group.frozen() && group.state() == ParamState::sharded))
        group.gather();
    }
    prefetch_after(unit.front(), -1);
  }

  void on_grad_ready(std::size_t g, std::size_t i) {
    queue_final_callback();
    auto& group = *groups_[g];
    if (!group.mark_grad_ready(i)) return;
    if (!sync_) {
      group.keep_for_accumulation();
      return;
    }
    launch_ready_reductions();
  }

  // Starts the all-gathers of the module that comes next after group `g`'s in forward order (+1
  // forward, -1 backward). A module's groups are consecutive in that order.
  void prefetch_after(std::size_t g, int step) {
    auto& order = step > 0 ? last_forward_order_ : forward_order_;
    auto at = std::find(order.begin(), order.end(), g);
    if (at == order.end()) return;
    const torch::nn::Module* current = &groups_[g]->module();
    const torch::nn::Module* next_module = nullptr;
    for (auto index = (at - order.begin()) + step; index >= 0 && index < static_cast<std::ptrdiff_t>(order.size());
         index += step) {
      auto& next = *groups_[order[static_cast<std::size_t>(index)]];
      if (&next.module() == current) continue;  // this module's other groups
      if (next_module == nullptr) next_module = &next.module();
      if (&next.module() != next_module) return;
      if (step > 0 ? next.state() == ParamState::sharded : next.state() == ParamState::freed) next.start_gather();
    }
  }

  // Reduce-scatters run in reverse forward order on every rank: a unit whose gradients are complete
  // waits for the units that ran after it in forward.
  void launch_ready_reductions() {
    while (next_reduction_ < reduce_order_.size()) {
      auto& group = *groups_[reduce_order_[next_reduction_]];
      if (!group.grads_complete()) return;
      group.reduce();
      ++next_reduction_;
    }
  }

  void queue_final_callback() {
    if (in_backward_) return;
    in_backward_ = true;
    // Trainable groups only; frozen ones have nothing to reduce.
    reduce_order_.clear();
    for (auto g = forward_order_.rbegin(); g != forward_order_.rend(); ++g)
      if (!groups_[*g]->frozen()) reduce_order_.push_back(*g);
    // Groups that did not run in forward this step still take part (zero gradients), last.
    for (std::size_t g = 0; g < groups_.size(); ++g)
      if (!groups_[g]->frozen() && std::find(reduce_order_.begin(), reduce_order_.end(), g) == reduce_order_.end())
        reduce_order_.push_back(g);
    next_reduction_ = 0;
    for (auto& group : groups_) group->begin_backward();
    torch::autograd::Engine::get_default_engine().queue_callback([this] { finish_backward(); });
  }

  void finish_backward() {
    if (sync_) {
      for (; next_reduction_ < reduce_order_.size(); ++next_reduction_)
        groups_[reduce_order_[next_reduction_]]->reduce();
      drop_unused_gradients();
    } else {
      for (auto& group : groups_)
        if (!group->frozen()) group->keep_for_accumulation();
    }
    // Frozen groups whose unit named no inputs (the root) or whose inputs took no gradient.
    for (auto& group : groups_)
      if (group->frozen()) group->reshard();
    in_backward_ = false;
    last_forward_order_ = forward_order_;
    forward_order_.clear();
  }

  // A parameter no rank produced a gradient for keeps grad = None (as in one process), so the
  // optimizer skips it instead of decaying it. One device-to-host copy per step, at the end.
  void drop_unused_gradients() {
    std::vector<torch::Tensor> flags;
    for (auto& group : groups_)
      if (group->reduced_flags().defined()) flags.push_back(group->reduced_flags());
    if (flags.empty()) return;
    auto host = torch::cat(flags).to(torch::kCPU);
    auto values = host.accessor<float, 1>();
    int64_t k = 0;
    for (auto& group : groups_) {
      if (!group->reduced_flags().defined()) continue;
      for (auto& p : group->params()) p.drop_unused_grad(values[k++] > 0);
      group->clear_reduced_flags();
    }
  }

  // --- public API -----------------------------------------------------------------------------
  double clip_grad_norm(double max_norm) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    for (const auto& group : groups_)
      for (const auto& p : group->params())
        if (p.param().grad().defined()) grads.push_back(p.param().grad());
    return clip_shard_grad_norm(*comms_.shard, grads, groups_.front()->flat_shard().device(), max_norm);
  }

  std::vector<std::pair<std::string, torch::Tensor>> full_state_dict() override { return full_state_dict(true); }
  std::vector<std::pair<std::string, torch::Tensor>> full_state_dict(bool keep, const StateFilter& include = {}) {
    return gather_full_state(policy_, groups_, *comms_.shard, keep, include);
  }

  void load_full_state_dict(const std::vector<std::pair<std::string, torch::Tensor>>& state,
                            const StateFilter& include) {
    load_full_state(policy_, groups_, state, view_.shard_rank, include);
  }

  int64_t num_parameters() const override { return total_parameters_; }

  torch::Tensor local_shard(const std::string& name) const { return find_local_shard(groups_, name); }

  FsdpMemory memory() const {
    FsdpMemory result;
    add_memory_bytes(policy_, groups_, result.parameter_bytes, result.gradient_bytes);
    return result;
  }

 private:
  policy::Policy& policy_;
  FsdpOptions options_;
  FsdpComms comms_;
  ShardingView& view_;
  bool& sync_;
  ParamGroups groups_;
  std::vector<torch::nn::Module*> hooked_modules_;
  // Group indices: forward order of this step and the last one, and this backward's reduce order.
  std::vector<std::size_t> forward_order_, last_forward_order_, reduce_order_;
  std::size_t next_reduction_ = 0;
  bool in_backward_ = false;
  int64_t total_parameters_ = 0;
};

const ParamShardSpec* ShardingView::find(const std::string& param_name) const {
  for (const auto& unit : units)
    for (const auto& spec : unit.params)
      if (spec.name == param_name) return &spec;
  return nullptr;
}

FsdpEngine::FsdpEngine(policy::Policy& policy, FsdpOptions options, std::shared_ptr<Comm> world)
    : options_(std::move(options)) {
  impl_ = std::make_unique<Impl>(policy, options_, std::move(world), view_, sync_);
}

FsdpEngine::~FsdpEngine() = default;

double FsdpEngine::clip_grad_norm(double max_norm) {
  return impl_->clip_grad_norm(max_norm);
}
std::vector<std::pair<std::string, torch::Tensor>> FsdpEngine::full_state_dict(bool keep, const StateFilter& include) {
  return impl_->full_state_dict(keep, include);
}
void FsdpEngine::load_full_state_dict(const std::vector<std::pair<std::string, torch::Tensor>>& state,
                                      const StateFilter& include) {
  impl_->load_full_state_dict(state, include);
}
torch::Tensor FsdpEngine::local_shard(const std::string& param_name) const {
  return impl_->local_shard(param_name);
}
FsdpMemory FsdpEngine::memory() const {
  return impl_->memory();
}

}  // namespace lrhost::dist::fsdp
