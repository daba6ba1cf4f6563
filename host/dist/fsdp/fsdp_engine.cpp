// The FSDP engine: per-unit gather / reshard / reduce-scatter driven by forward hooks, tensor hooks
// on unit outputs (pre-backward) and post-accumulate-grad hooks on parameters (post-backward).
//
// Parameter states. Each unit parameter P (the module's tensor, whose identity the optimizer keeps)
// points either at its shard (between steps) or at an "unsharded" tensor of the full shape whose
// storage FSDP allocates on gather and frees on reshard. Freeing the storage instead of dropping the
// tensor matters: autograd keeps views of P's full data (e.g. the transposed weight of a linear), and
// they share that storage, so refilling it before backward makes every saved view valid again, while
// between forward and backward (ZeRO-3) the memory really is released. Data is only ever written
// into the unsharded tensor, never into P, so P's version counter (checked by autograd) never moves.
#include "host/dist/fsdp/fsdp_engine.hpp"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "host/dist/fsdp/wrap_units.hpp"
#include "host/policy/forward_hooks.hpp"
#include "host/util/error.hpp"

namespace lrhost::dist::fsdp {
namespace {

void free_storage(const torch::Tensor& tensor) {
  auto* storage = tensor.storage().unsafeGetStorageImpl();
  if (storage->nbytes() == 0) return;
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, tensor.device()));
  storage->set_nbytes(0);
}

void allocate_storage(const torch::Tensor& tensor) {
  auto* storage = tensor.storage().unsafeGetStorageImpl();
  std::size_t bytes = static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
  if (storage->nbytes() == bytes) return;
  storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
  storage->set_nbytes(bytes);
}

enum class ParamState { sharded, gathered, freed };

struct Unit {
  UnitLayout layout;
  torch::nn::Module* module = nullptr;
  bool is_root = false;
  std::vector<int64_t> offsets;
  std::vector<torch::Tensor> params;  // the module's parameter tensors
  // This rank's flat shard (fp32 master): every parameter's padded shard in layout order, so it is
  // the all-gather input as it stands. `shards[i]` are views of it, shaped shard_shape().
  torch::Tensor flat_shard;
  std::vector<torch::Tensor> shards;
  // Per parameter, in the gather dtype: `padded` holds all ranks' rows, [shard_size * rows_per_rank,
  // row_numel], so one split of the all-gather output fills every parameter; `unsharded` is its
  // first `rows` rows in the parameter's shape. They share a storage, freed when not gathered.
  std::vector<torch::Tensor> padded;
  std::vector<torch::Tensor> unsharded;
  ParamState state = ParamState::sharded;
  // A prefetched all-gather in flight.
  std::shared_ptr<CommWork> gather_work;
  torch::Tensor gather_out;
  // Per backward.
  std::vector<bool> ready;
  std::size_t pending = 0;
  bool reduced = false;
  std::vector<torch::Tensor> stashed_shard_grads;  // grads from before this forward (not zeroed)
  std::vector<torch::Tensor> accumulated;          // unsharded grads kept over no-sync micro-steps
  torch::Tensor reduced_flags;                     // per parameter: ranks that had a gradient
  std::vector<bool> had_stash;
};

}  // namespace

class FsdpEngine::Impl : public policy::ShardedStateSource {
 public:
  Impl(policy::Policy& policy, const FsdpOptions& options, std::shared_ptr<Comm> world, ShardingView& view, bool& sync)
      : policy_(policy), options_(options), world_(std::move(world)), view_(view), sync_(sync) {
    make_groups();
    auto found = find_wrap_units(policy, options.wrap_modules);
    torch::NoGradGuard no_grad;
    for (auto& wrap : found) {
      auto unit = std::make_unique<Unit>();
      unit->layout = make_unit_layout(wrap.path.empty() ? "root" : wrap.path, wrap.module_type, wrap.params,
                                      view_.shard_size);
      unit->module = wrap.module;
      unit->is_root = wrap.path.empty();
      unit->offsets = unit->layout.shard_offsets();
      const auto& first = wrap.params.front().second;
      unit->flat_shard = torch::empty({unit->layout.shard_numel()}, first.options().requires_grad(false));
      for (std::size_t i = 0; i < wrap.params.size(); ++i) {
        const auto& spec = unit->layout.params[i];
        auto& param = wrap.params[i].second;
        if (!param.is_floating_point())
          throw util::ConfigError("FSDP: parameter '" + spec.name + "' is not floating point");
        if (param.scalar_type() != first.scalar_type() || param.device() != first.device())
          throw util::ConfigError("FSDP: unit '" + unit->layout.name + "' mixes parameter dtypes or devices ('" +
                                  spec.name + "' is " + c10::toString(param.scalar_type()) + " on " +
                                  param.device().str() + ", '" + unit->layout.params[0].name + "' is " +
                                  c10::toString(first.scalar_type()) + " on " + first.device().str() +
                                  "); one flat all-gather per unit needs one of each");
        unit->params.push_back(param);
        auto shard = unit->flat_shard.narrow(0, unit->offsets[i], spec.shard_numel()).view(spec.shard_shape());
        shard.copy_(shard_of(spec, param.detach(), view_.shard_rank));
        unit->shards.push_back(shard);
        auto gather_dtype = options.param_dtype.value_or(param.scalar_type());
        auto padded = torch::empty({view_.shard_size * spec.rows_per_rank, spec.row_numel},
                                   param.options().dtype(gather_dtype).requires_grad(false));
        unit->unsharded.push_back(padded.narrow(0, 0, spec.rows).view(spec.shape));
        free_storage(padded);
        unit->padded.push_back(padded);
        param.set_data(shard);
      }
      unit->ready.assign(unit->params.size(), false);
      unit->had_stash.assign(unit->params.size(), false);
      unit->stashed_shard_grads.resize(unit->params.size());
      unit->accumulated.resize(unit->params.size());
      view_.units.push_back(unit->layout);
      units_.push_back(std::move(unit));
    }
    for (std::size_t u = 0; u < units_.size(); ++u) {
      auto& unit = *units_[u];
      policy::set_forward_hooks(*unit.module, std::make_shared<UnitHooks>(this, u));
      for (std::size_t i = 0; i < unit.params.size(); ++i)
        torch::autograd::impl::set_post_acc_grad_hooks(unit.params[i], std::make_unique<GradReadyHook>(this, u, i));
    }
    for (const auto& item : policy.named_parameters()) total_parameters_ += item.value().numel();
    for (const auto& unit : units_)
      for (std::size_t i = 0; i < unit->params.size(); ++i)
        total_parameters_ += unit->layout.params[i].numel() - unit->params[i].numel();
    policy.set_sharded_state_source(this);
  }

  ~Impl() override {
    policy_.set_sharded_state_source(nullptr);
    for (auto& unit : units_) {
      policy::set_forward_hooks(*unit->module, nullptr);
      for (auto& p : unit->params) torch::autograd::impl::post_acc_grad_hooks(p).reset();
    }
  }

  // --- forward / backward hooks -------------------------------------------------------------
  struct UnitHooks final : policy::ForwardHooks {
    UnitHooks(Impl* impl, std::size_t unit) : impl(impl), unit(unit) {}
    void pre_forward() override { impl->pre_forward(unit); }
    void post_forward(const std::vector<torch::Tensor>& outputs) override { impl->post_forward(unit, outputs); }
    Impl* impl;
    std::size_t unit;
  };

  struct GradReadyHook final : torch::autograd::PostAccumulateGradHook {
    GradReadyHook(Impl* impl, std::size_t unit, std::size_t param) : impl(impl), unit(unit), param(param) {}
    void operator()(const torch::autograd::Variable&) override { impl->on_grad_ready(unit, param); }
    Impl* impl;
    std::size_t unit, param;
  };

  void pre_forward(std::size_t u) {
    auto& unit = *units_[u];
    bool training = torch::GradMode::is_enabled();
    if (training) {
      if (std::find(forward_order_.begin(), forward_order_.end(), u) == forward_order_.end()) forward_order_.push_back(u);
      // Gradients left from an earlier step (not zeroed) are shard-shaped: set them aside so
      // autograd accumulates this backward's unsharded gradients from scratch.
      for (std::size_t i = 0; i < unit.params.size(); ++i) {
        auto& grad = unit.params[i].mutable_grad();
        if (grad.defined() && !unit.stashed_shard_grads[i].defined()) {
          unit.stashed_shard_grads[i] = grad;
          grad = torch::Tensor();
        }
      }
    }
    gather(unit);
    if (training) prefetch_after(u, +1);
  }

  void post_forward(std::size_t u, const std::vector<torch::Tensor>& outputs) {
    auto& unit = *units_[u];
    bool needs_backward = torch::GradMode::is_enabled() &&
                          std::any_of(outputs.begin(), outputs.end(),
                                      [](const torch::Tensor& t) { return t.defined() && t.requires_grad(); });
    if (!needs_backward) {
      reshard(unit);
      return;
    }
    // The root's parameters are used again right at the start of backward; ZeRO-2 keeps all.
    if (unit.is_root || !options_.reshard_after_forward) return;
    for (auto& p : unit.padded) free_storage(p);
    unit.state = ParamState::freed;
    for (const auto& output : outputs) {
      if (!output.defined() || !output.requires_grad()) continue;
      auto hook_output = output;
      hook_output.register_hook([this, u](const torch::Tensor&) { pre_backward(u); });
    }
  }

  void pre_backward(std::size_t u) {
    queue_final_callback();
    auto& unit = *units_[u];
    if (unit.state == ParamState::freed) gather(unit);
    prefetch_after(u, -1);
  }

  void on_grad_ready(std::size_t u, std::size_t i) {
    queue_final_callback();
    auto& unit = *units_[u];
    if (unit.ready[i]) return;
    unit.ready[i] = true;
    if (--unit.pending > 0) return;
    if (!sync_) {
      keep_for_accumulation(unit);
      return;
    }
    launch_ready_reductions();
  }

  // Reduce-scatters run in reverse forward order on every rank: a unit whose gradients are complete
  // waits for the units that ran after it in forward.
  void launch_ready_reductions() {
    while (next_reduction_ < reduce_order_.size()) {
      auto& unit = *units_[reduce_order_[next_reduction_]];
      if (unit.pending > 0) return;
      reduce(unit);
      ++next_reduction_;
    }
  }

  void queue_final_callback() {
    if (in_backward_) return;
    in_backward_ = true;
    reduce_order_.assign(forward_order_.rbegin(), forward_order_.rend());
    // Units that did not run in forward this step still take part (zero gradients), last.
    for (std::size_t u = 0; u < units_.size(); ++u)
      if (std::find(reduce_order_.begin(), reduce_order_.end(), u) == reduce_order_.end()) reduce_order_.push_back(u);
    next_reduction_ = 0;
    for (auto& unit : units_) {
      unit->pending = unit->params.size();
      std::fill(unit->ready.begin(), unit->ready.end(), false);
      unit->reduced = false;
    }
    torch::autograd::Engine::get_default_engine().queue_callback([this] { finish_backward(); });
  }

  void finish_backward() {
    if (sync_) {
      for (; next_reduction_ < reduce_order_.size(); ++next_reduction_) reduce(*units_[reduce_order_[next_reduction_]]);
      drop_unused_gradients();
    } else {
      for (auto& unit : units_) keep_for_accumulation(*unit);
    }
    in_backward_ = false;
    last_forward_order_ = forward_order_;
    forward_order_.clear();
  }

  // --- gather / reshard ---------------------------------------------------------------------
  void start_gather(Unit& unit) {
    if (unit.gather_work || unit.state == ParamState::gathered) return;
    torch::NoGradGuard no_grad;
    // The master shard itself, or one cast of it for mixed precision. Nothing writes the shards
    // while a gather is in flight: the optimizer steps after backward has waited for every gather.
    auto input = unit.flat_shard.to(unit.padded.front().scalar_type());
    unit.gather_out = torch::empty({view_.shard_size * unit.layout.shard_numel()}, input.options());
    unit.gather_work = shard_comm_->all_gather_into_async(unit.gather_out, input);
  }

  void gather(Unit& unit) {
    if (unit.state == ParamState::gathered) return;
    start_gather(unit);
    unit.gather_work->wait();
    unit.gather_work.reset();
    torch::NoGradGuard no_grad;
    // Row r of the output is rank r's flat shard; its column block i is rank r's rows of parameter
    // i, which is row block r of padded[i]: one split copy fills every parameter.
    auto per_rank = unit.gather_out.view({view_.shard_size, unit.layout.shard_numel()});
    std::vector<torch::Tensor> targets;
    std::vector<int64_t> sizes;
    for (std::size_t i = 0; i < unit.params.size(); ++i) {
      allocate_storage(unit.padded[i]);
      targets.push_back(unit.padded[i].view({view_.shard_size, unit.layout.params[i].shard_numel()}));
      sizes.push_back(unit.layout.params[i].shard_numel());
    }
    at::split_with_sizes_copy_out(targets, per_rank, sizes, 1);
    if (unit.state == ParamState::sharded)
      for (std::size_t i = 0; i < unit.params.size(); ++i) unit.params[i].set_data(unit.unsharded[i]);
    unit.gather_out = torch::Tensor();
    unit.state = ParamState::gathered;
  }

  // Starts the all-gather of the unit `step` places after `u` in forward order (+1 forward, -1 backward).
  void prefetch_after(std::size_t u, int step) {
    auto& order = step > 0 ? last_forward_order_ : forward_order_;
    auto at = std::find(order.begin(), order.end(), u);
    if (at == order.end()) return;
    auto index = (at - order.begin()) + step;
    if (index < 0 || index >= static_cast<std::ptrdiff_t>(order.size())) return;
    auto& next = *units_[order[index]];
    if (step > 0 ? next.state == ParamState::sharded : next.state == ParamState::freed) start_gather(next);
  }

  void reshard(Unit& unit) {
    if (unit.gather_work) {  // a prefetch nobody used: finish it so ranks stay in step
      unit.gather_work->wait();
      unit.gather_work.reset();
      unit.gather_out = torch::Tensor();
    }
    if (unit.state == ParamState::sharded) return;
    for (std::size_t i = 0; i < unit.params.size(); ++i) {
      free_storage(unit.padded[i]);
      unit.params[i].set_data(unit.shards[i]);
    }
    unit.state = ParamState::sharded;
  }

  // --- gradients ----------------------------------------------------------------------------
  void keep_for_accumulation(Unit& unit) {
    if (unit.reduced) return;
    for (std::size_t i = 0; i < unit.params.size(); ++i) {
      auto& grad = unit.params[i].mutable_grad();
      if (!grad.defined()) continue;
      auto as_fp32 = grad.to(torch::kFloat32);
      unit.accumulated[i] = unit.accumulated[i].defined() ? unit.accumulated[i].add_(as_fp32) : as_fp32.clone();
      grad = torch::Tensor();
    }
    reshard(unit);
    restore_stashed(unit);
    unit.reduced = true;
  }

  void restore_stashed(Unit& unit) {
    for (std::size_t i = 0; i < unit.params.size(); ++i) {
      if (!unit.stashed_shard_grads[i].defined()) continue;
      unit.params[i].mutable_grad() = unit.stashed_shard_grads[i];
      unit.stashed_shard_grads[i] = torch::Tensor();
    }
  }

  void reduce(Unit& unit) {
    if (unit.reduced) return;
    torch::NoGradGuard no_grad;
    const int64_t shard_numel = unit.layout.shard_numel();
    const auto n = static_cast<int64_t>(unit.params.size());
    const int groups = view_.shard_size;
    // Each parameter's gradient (plus what earlier micro-steps accumulated) as [rows, row_numel].
    std::vector<torch::Tensor> grads(unit.params.size());
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < unit.params.size(); ++i) {
      auto grad = unit.params[i].grad();
      auto total = unit.accumulated[i];
      if (grad.defined()) total = total.defined() ? total.add_(grad.to(torch::kFloat32)) : grad;
      if (total.defined())
        grads[i] = total.reshape({unit.layout.params[i].rows, unit.layout.params[i].row_numel});
      else
        missing.push_back(i);
      unit.params[i].mutable_grad() = torch::Tensor();
      unit.accumulated[i] = torch::Tensor();
    }
    // The packing kernel takes one dtype: the gradients' own when they agree (bf16 gradients stay
    // bf16 until the one cast after packing), else fp32.
    std::optional<c10::ScalarType> common;
    bool agree = true;
    for (const auto& g : grads) {
      if (!g.defined()) continue;
      if (!common) common = g.scalar_type();
      agree = agree && g.scalar_type() == *common;
    }
    auto dtype = common && agree ? *common : torch::kFloat32;
    auto options = unit.flat_shard.options().dtype(dtype);
    for (auto& g : grads) g = g.defined() ? g.to(dtype) : g;
    for (std::size_t i : missing)
      grads[i] = torch::zeros({unit.layout.params[i].rows, unit.layout.params[i].row_numel}, options);
    // One "had a gradient" flag per parameter, summed over ranks like DDP's unused-parameter flags.
    auto flags = torch::ones({groups, n}, options);
    for (std::size_t i : missing) flags.narrow(1, static_cast<int64_t>(i), 1).zero_();
    grads.push_back(flags);
    // Row r of `input` is what rank r of the shard group receives: its padded rows of every
    // gradient, in layout order, then the flags. _chunk_cat pads each tensor's dim 0 to a multiple
    // of `groups` and splits it exactly as shard_layout does.
    auto input = at::_chunk_cat(grads, 0, groups).to(torch::kFloat32);
    options = options.dtype(torch::kFloat32);
    // Average over every data-parallel rank: divide locally, then SUM (Gloo has no AVG).
    input.narrow(1, 0, shard_numel).div_(static_cast<double>(world_->size()));
    auto output = torch::empty({shard_numel + n}, options);
    if (groups > 1)
      shard_comm_->reduce_scatter_into(output, input);
    else
      output.copy_(input[0]);
    if (view_.replicate_size > 1) replicate_comm_->all_reduce(output);
    reshard(unit);
    // Each gradient is its own tensor, not a view of one buffer: optimizers detach and zero
    // gradients in place, which views do not allow. One split copy fills them all.
    std::vector<torch::Tensor> shard_grads;
    std::vector<int64_t> sizes;
    for (std::size_t i = 0; i < unit.params.size(); ++i) {
      shard_grads.push_back(torch::empty(unit.layout.params[i].shard_shape(), unit.flat_shard.options()));
      sizes.push_back(unit.layout.params[i].shard_numel());
    }
    std::vector<torch::Tensor> flat_grads;
    for (auto& g : shard_grads) flat_grads.push_back(g.view(-1));
    at::split_with_sizes_copy_out(flat_grads, output.narrow(0, 0, shard_numel).to(unit.flat_shard.scalar_type()), sizes, 0);
    for (std::size_t i = 0; i < unit.params.size(); ++i) {
      const auto& shard_grad = shard_grads[i];
      auto& stashed = unit.stashed_shard_grads[i];
      unit.had_stash[i] = stashed.defined();
      unit.params[i].mutable_grad() = stashed.defined() ? stashed.add_(shard_grad) : shard_grad;
      stashed = torch::Tensor();
    }
    unit.reduced_flags = output.narrow(0, shard_numel, n);
    unit.reduced = true;
  }

  // A parameter no rank produced a gradient for keeps grad = None (as in one process), so the
  // optimizer skips it instead of decaying it. One device-to-host copy per step, at the end.
  void drop_unused_gradients() {
    std::vector<torch::Tensor> flags;
    for (auto& unit : units_)
      if (unit->reduced_flags.defined()) flags.push_back(unit->reduced_flags);
    if (flags.empty()) return;
    auto host = torch::cat(flags).to(torch::kCPU);
    auto values = host.accessor<float, 1>();
    int64_t k = 0;
    for (auto& unit : units_) {
      if (!unit->reduced_flags.defined()) continue;
      for (std::size_t i = 0; i < unit->params.size(); ++i, ++k)
        // Gradients of earlier, unzeroed steps stay; a fresh all-zero reduction does not count.
        if (!(values[k] > 0) && !unit->had_stash[i]) unit->params[i].mutable_grad() = torch::Tensor();
      unit->reduced_flags = torch::Tensor();
    }
  }

  double clip_grad_norm(double max_norm) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    for (auto& unit : units_)
      for (auto& p : unit->params)
        if (p.grad().defined()) grads.push_back(p.grad());
    auto device = units_.front()->flat_shard.device();
    auto sum_sq = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
    // Multi-tensor kernels: a handful of launches for all gradients instead of several per tensor.
    if (!grads.empty()) sum_sq += torch::stack(at::_foreach_norm(grads, 2, torch::kFloat32)).pow(2).sum();
    // Replicas hold identical shards: the norm sums over the shard group only.
    shard_comm_->all_reduce(sum_sq);
    auto total = sum_sq.sqrt();
    auto coefficient = torch::clamp_max((total + 1e-6).reciprocal() * max_norm, 1.0);
    if (!grads.empty()) at::_foreach_mul_(grads, coefficient.squeeze());
    return total.item<double>();
  }

  // --- state --------------------------------------------------------------------------------
  std::vector<std::pair<std::string, torch::Tensor>> full_state_dict() override {
    torch::NoGradGuard no_grad;
    std::map<const torch::TensorImpl*, torch::Tensor> full;
    for (auto& unit : units_) {
      if (unit->state != ParamState::sharded)
        throw util::Error("FSDP: the full state dict was asked for during forward/backward of unit '" +
                          unit->layout.name + "'");
      auto input = torch::cat([&] {
        std::vector<torch::Tensor> pieces;
        for (auto& s : unit->shards) pieces.push_back(s.reshape(-1));
        return pieces;
      }());
      auto out = torch::empty({view_.shard_size * unit->layout.shard_numel()}, input.options());
      shard_comm_->all_gather_into(out, input);
      auto per_rank = out.view({view_.shard_size, unit->layout.shard_numel()}).to(torch::kCPU);
      for (std::size_t i = 0; i < unit->params.size(); ++i) {
        const auto& spec = unit->layout.params[i];
        full[unit->params[i].unsafeGetTensorImpl()] = per_rank.narrow(1, unit->offsets[i], spec.shard_numel())
                                                          .reshape({view_.shard_size * spec.rows_per_rank, spec.row_numel})
                                                          .narrow(0, 0, spec.rows)
                                                          .reshape(spec.shape)
                                                          .clone();
      }
    }
    std::vector<std::pair<std::string, torch::Tensor>> entries;
    for (const auto& item : policy_.named_parameters()) {
      auto found = full.find(item.value().unsafeGetTensorImpl());
      entries.emplace_back(item.key(), found != full.end() ? found->second : item.value().detach().to(torch::kCPU).clone());
    }
    for (const auto& item : policy_.named_buffers())
      entries.emplace_back(item.key(), item.value().detach().to(torch::kCPU).clone());
    return entries;
  }

  void load_full_state_dict(const std::vector<std::pair<std::string, torch::Tensor>>& state) {
    torch::NoGradGuard no_grad;
    std::map<std::string, torch::Tensor> by_name(state.begin(), state.end());
    for (auto& unit : units_) {
      reshard(*unit);
      for (std::size_t i = 0; i < unit->params.size(); ++i) {
        const auto& spec = unit->layout.params[i];
        auto found = by_name.find(spec.name);
        if (found == by_name.end()) throw util::DataError("FSDP load: no tensor for parameter '" + spec.name + "'");
        if (found->second.sizes().vec() != spec.shape)
          throw util::DataError("FSDP load: parameter '" + spec.name + "' has shape " +
                                c10::str(found->second.sizes()) + ", the model expects " + c10::str(c10::IntArrayRef(spec.shape)));
        unit->shards[i].copy_(shard_of(spec, found->second.to(unit->shards[i].options()), view_.shard_rank));
        by_name.erase(found);
      }
    }
    for (const auto& item : policy_.named_parameters()) {
      auto found = by_name.find(item.key());
      if (found != by_name.end()) item.value().copy_(found->second);
    }
    for (const auto& item : policy_.named_buffers()) {
      auto found = by_name.find(item.key());
      if (found != by_name.end()) item.value().copy_(found->second);
    }
  }

  int64_t num_parameters() const override { return total_parameters_; }

  torch::Tensor local_shard(const std::string& name) const {
    for (const auto& unit : units_)
      for (std::size_t i = 0; i < unit->params.size(); ++i)
        if (unit->layout.params[i].name == name) return unit->params[i];
    throw util::ConfigError("FSDP: '" + name + "' is not a sharded parameter");
  }

  FsdpMemory memory() const {
    FsdpMemory result;
    std::set<const torch::TensorImpl*> sharded;
    auto bytes = [](const torch::Tensor& t) {
      return t.defined() ? static_cast<int64_t>(t.storage().nbytes() == 0 ? 0 : t.numel() * t.element_size()) : 0;
    };
    for (const auto& unit : units_) {
      for (std::size_t i = 0; i < unit->params.size(); ++i) {
        sharded.insert(unit->params[i].unsafeGetTensorImpl());
        result.parameter_bytes += bytes(unit->shards[i]) + bytes(unit->padded[i]);
        result.gradient_bytes += bytes(unit->params[i].grad()) + bytes(unit->accumulated[i]);
      }
    }
    for (const auto& item : policy_.named_parameters()) {
      if (sharded.count(item.value().unsafeGetTensorImpl())) continue;
      result.parameter_bytes += bytes(item.value());
      result.gradient_bytes += bytes(item.value().grad());
    }
    return result;
  }

 private:
  void make_groups() {
    const int world = world_->size(), rank = world_->rank();
    const int shard = options_.shard_size, replicate = options_.replicate_size;
    if (shard < 1 || replicate < 1 || shard * replicate != world)
      throw util::ConfigError("FSDP: parallelism.dp_shard (" + std::to_string(shard) + ") x parallelism.dp_replicate (" +
                                  std::to_string(replicate) + ") must equal the number of ranks (" +
                                  std::to_string(world) + ")",
                              "set dp_shard = -1 to use all ranks that dp_replicate leaves");
    view_.shard_size = shard;
    view_.replicate_size = replicate;
    view_.shard_rank = rank % shard;
    view_.replicate_rank = rank / shard;
    // Every rank creates its own groups in the same order: first its shard group, then its
    // replicate group (c10d subgroups only need their members).
    std::vector<int> shard_ranks, replicate_ranks;
    for (int r = 0; r < shard; ++r) shard_ranks.push_back(view_.replicate_rank * shard + r);
    for (int g = 0; g < replicate; ++g) replicate_ranks.push_back(g * shard + view_.shard_rank);
    shard_comm_ = shard == world ? world_ : world_->new_group("fsdp_shard", shard_ranks);
    replicate_comm_ = replicate == world ? world_ : world_->new_group("fsdp_replicate", replicate_ranks);
  }

  policy::Policy& policy_;
  FsdpOptions options_;
  std::shared_ptr<Comm> world_, shard_comm_, replicate_comm_;
  ShardingView& view_;
  bool& sync_;
  std::vector<std::unique_ptr<Unit>> units_;
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

double FsdpEngine::clip_grad_norm(double max_norm) { return impl_->clip_grad_norm(max_norm); }
std::vector<std::pair<std::string, torch::Tensor>> FsdpEngine::full_state_dict() { return impl_->full_state_dict(); }
void FsdpEngine::load_full_state_dict(const std::vector<std::pair<std::string, torch::Tensor>>& state) {
  impl_->load_full_state_dict(state);
}
torch::Tensor FsdpEngine::local_shard(const std::string& param_name) const { return impl_->local_shard(param_name); }
FsdpMemory FsdpEngine::memory() const { return impl_->memory(); }

}  // namespace lrhost::dist::fsdp
