// One parameter group of an FSDP wrap unit at run time (FSDP2's FSDPParamGroup): its parameters
// (fsdp_param.hpp, all trainable or all frozen, of one dtype),
// this rank's flat shard that is the all-gather input as it stands, and the unit's state. gather
// (unshard) = one flat all-gather, possibly started early as a prefetch, and one split copy into the
// parameters' unsharded tensors; reshard points the parameters back at their shards and frees the
// unsharded storage; after backward, reduce = one packed reduce-scatter (fsdp_collectives.hpp) that
// leaves the shard gradient on each parameter, or, on a no-sync micro-step, keep_for_accumulation.
// A frozen group is only gathered and resharded: it has no gradients to reduce. The engine
// (fsdp_engine.cpp) decides when each runs and in which order across groups.
#pragma once
#include <torch/torch.h>
#include <functional>

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "host/dist/fsdp/fsdp_collectives.hpp"
#include "host/dist/fsdp/fsdp_param.hpp"
#include "host/dist/fsdp/shard_layout.hpp"
#include "host/dist/fsdp/wrap_units.hpp"

namespace lrhost::dist::fsdp {

// sharded: the parameters point at their shards. gathered: at their filled unsharded tensors.
// freed: at their unsharded tensors with the storage freed (ZeRO-3, between forward and backward).
enum class ParamState { sharded, gathered, freed };

class FsdpParamGroup {
 public:
  // Shards `group`, parameters of `unit`, in place (they must be floating point, of one dtype and on
  // one device). Gathered parameters are in `param_dtype`, or their own dtype when it is unset.
  // `device`: where the shards live (the parameters' device when unset).
  // `values_of(param)`: where a parameter's values are when not in it (undefined: in it), e.g. a
  // checkpoint tensor of another dtype, copied (and cast) into the shard rows only.
  FsdpParamGroup(const WrapUnit& unit, const ParamGroupSpec& group, FsdpComms comms,
                 std::optional<c10::ScalarType> param_dtype, std::optional<torch::Device> device = std::nullopt,
                 const std::function<torch::Tensor(const torch::Tensor&)>& values_of = {});

  const UnitLayout& layout() const { return layout_; }
  torch::nn::Module& module() const { return *module_; }
  bool is_root() const { return is_root_; }
  bool frozen() const { return layout_.frozen; }
  ParamState state() const { return state_; }
  // Offset of each parameter's shard inside the flat shard.
  const std::vector<int64_t>& offsets() const { return offsets_; }
  // This rank's flat shard (fp32 master): every parameter's padded shard in layout order.
  const torch::Tensor& flat_shard() const { return flat_shard_; }
  std::vector<FsdpParam>& params() { return params_; }
  const std::vector<FsdpParam>& params() const { return params_; }

  // --- gather / reshard -----------------------------------------------------------------------
  // Launches the all-gather unless one is in flight or the unit is gathered (prefetch).
  void start_gather();
  // Waits for (or runs) the all-gather and points the parameters at their unsharded tensors.
  void gather();
  // Points the parameters back at their shards and frees the unsharded storage; a prefetch nobody
  // used is waited for first.
  void reshard();
  // ZeRO-3 after forward: frees the unsharded storage but leaves the parameters pointing at their
  // unsharded tensors, so that gather() before backward makes autograd's saved views valid again.
  void free_after_forward();

  // --- gradients ------------------------------------------------------------------------------
  void stash_shard_grads();
  // Start of a backward: no parameter's gradient is ready yet.
  void begin_backward();
  // Marks parameter `param`'s gradient ready; true when that completes the unit's gradients.
  bool mark_grad_ready(std::size_t param);
  bool grads_complete() const { return pending_ == 0; }
  // No-sync micro-step: keeps the unsharded gradients (fp32) for the synchronising one, reshards
  // and puts earlier shard gradients back. Once per backward.
  void keep_for_accumulation();
  // Reduce-scatters the gradients (with those accumulated) into shard gradients and reshards.
  // Once per backward.
  void reduce();
  // After reduce(): per parameter, the number of ranks that had a gradient (fp32, on the device).
  const torch::Tensor& reduced_flags() const { return reduced_flags_; }
  void clear_reduced_flags() { reduced_flags_ = torch::Tensor(); }

 private:
  FsdpComms comms_;
  UnitLayout layout_;
  torch::nn::Module* module_ = nullptr;
  bool is_root_ = false;
  std::vector<int64_t> offsets_;
  torch::Tensor flat_shard_;  // the all-gather input; the parameters' shards are views of it
  std::vector<FsdpParam> params_;
  ParamState state_ = ParamState::sharded;
  // A prefetched all-gather in flight.
  std::shared_ptr<CommWork> gather_work_;
  torch::Tensor gather_out_;
  // Per backward.
  std::vector<bool> ready_;
  std::size_t pending_ = 0;
  bool reduced_ = false;
  torch::Tensor reduced_flags_;
};

using ParamGroups = std::vector<std::unique_ptr<FsdpParamGroup>>;

}  // namespace lrhost::dist::fsdp
