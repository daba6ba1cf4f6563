// One wrap unit: sharding its parameters, gather / reshard, and its post-backward reduction.
#include "host/dist/fsdp/fsdp_param_group.hpp"

#include <algorithm>

#include "host/util/error.hpp"

namespace lrhost::dist::fsdp {

FsdpParamGroup::FsdpParamGroup(const WrapUnit& unit, const ParamGroupSpec& group, FsdpComms comms,
                               std::optional<c10::ScalarType> param_dtype, std::optional<torch::Device> device,
                               const std::function<torch::Tensor(const torch::Tensor&)>& values_of)
    : comms_(std::move(comms)) {
  layout_ = make_unit_layout(unit.path.empty() ? "root" : unit.path, unit.module_type, group.params, comms_.shard_size,
                             group.frozen);
  module_ = unit.module;
  is_root_ = unit.path.empty();
  offsets_ = layout_.shard_offsets();
  const auto& first = group.params.front().second;
  flat_shard_ = torch::empty({layout_.shard_numel()},
                             first.options().device(device.value_or(first.device())).requires_grad(false));
  params_.reserve(group.params.size());
  for (std::size_t i = 0; i < group.params.size(); ++i) {
    const auto& spec = layout_.params[i];
    const auto& param = group.params[i].second;
    if (!param.is_floating_point())
      throw util::ConfigError("FSDP: parameter '" + spec.name + "' is not floating point");
    if (param.device() != first.device())
      throw util::ConfigError("FSDP: unit '" + layout_.name + "' has parameters on two devices ('" + spec.name +
                                  "' is on " + param.device().str() + ", '" + layout_.params[0].name + "' on " +
                                  first.device().str() + ")",
                              "move the whole policy to one device before acc:prepare");
    const torch::Tensor values = values_of ? values_of(param) : torch::Tensor();
    params_.emplace_back(spec, param, values.defined() ? values : param, flat_shard_, offsets_[i], comms_.shard_rank,
                         comms_.shard_size, param_dtype.value_or(param.scalar_type()));
  }
  ready_.assign(params_.size(), false);
}

// --- gather / reshard -----------------------------------------------------------------------

void FsdpParamGroup::start_gather() {
  if (gather_work_ || state_ == ParamState::gathered) return;
  torch::NoGradGuard no_grad;
  // The master shard itself, or one cast of it for mixed precision. Nothing writes the shards
  // while a gather is in flight: the optimizer steps after backward has waited for every gather.
  auto input = flat_shard_.to(params_.front().padded().scalar_type());
  gather_work_ = all_gather_flat_async(*comms_.shard, layout_, input, gather_out_);
}

void FsdpParamGroup::gather() {
  if (state_ == ParamState::gathered) return;
  start_gather();
  gather_work_->wait();
  gather_work_.reset();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> padded;
  for (auto& p : params_) {
    p.allocate_unsharded();
    padded.push_back(p.padded());
  }
  copy_out_all_gather(gather_out_, layout_, padded);
  if (state_ == ParamState::sharded)
    for (auto& p : params_) p.use_unsharded();
  gather_out_ = torch::Tensor();
  state_ = ParamState::gathered;
}

void FsdpParamGroup::reshard() {
  if (gather_work_) {  // a prefetch nobody used: finish it so ranks stay in step
    gather_work_->wait();
    gather_work_.reset();
    gather_out_ = torch::Tensor();
  }
  if (state_ == ParamState::sharded) return;
  for (auto& p : params_) {
    p.free_unsharded();
    p.use_shard();
  }
  state_ = ParamState::sharded;
}

void FsdpParamGroup::free_after_forward() {
  for (auto& p : params_) p.free_unsharded();
  state_ = ParamState::freed;
}

// --- gradients ------------------------------------------------------------------------------

void FsdpParamGroup::stash_shard_grads() {
  for (auto& p : params_) p.stash_shard_grad();
}

void FsdpParamGroup::begin_backward() {
  pending_ = params_.size();
  std::fill(ready_.begin(), ready_.end(), false);
  reduced_ = false;
}

bool FsdpParamGroup::mark_grad_ready(std::size_t param) {
  if (ready_[param]) return false;
  ready_[param] = true;
  return --pending_ == 0;
}

void FsdpParamGroup::keep_for_accumulation() {
  if (reduced_) return;
  for (auto& p : params_) p.accumulate_unsharded_grad();
  reshard();
  for (auto& p : params_) p.restore_stashed_grad();
  reduced_ = true;
}

void FsdpParamGroup::reduce() {
  if (reduced_) return;
  torch::NoGradGuard no_grad;
  // Each parameter's gradient (plus what earlier micro-steps accumulated) as [rows, row_numel].
  std::vector<torch::Tensor> grads;
  for (auto& p : params_) grads.push_back(p.take_unsharded_grad());
  auto output = reduce_scatter_grads(std::move(grads), layout_, flat_shard_, comms_);
  reshard();
  auto shard_grads = copy_out_reduce_scatter(output, layout_, flat_shard_);
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].set_shard_grad(shard_grads[i]);
  reduced_flags_ = output.narrow(0, layout_.shard_numel(), static_cast<int64_t>(params_.size()));
  reduced_ = true;
}

}  // namespace lrhost::dist::fsdp
