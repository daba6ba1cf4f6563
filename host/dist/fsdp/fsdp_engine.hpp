// FSDP for a prepared policy, FSDP2-style in LibTorch C++. Every parameter of a wrap unit
// (wrap_units.hpp), trainable or frozen, is sharded on dim 0 across the shard group
// (shard_layout.hpp); the module's own parameter tensor holds this rank's padded shard between
// steps, so the optimizer, its state and gradient clipping see only shards. Frozen parameters are
// only gathered and resharded: no gradient, reduction or optimizer state; they are freed once the
// gradients of the unit's inputs are computed (or at the end of backward). Around each unit's
// forward (hooks from forward_hooks.hpp): pre-forward, one flat all-gather of the unit's shards into per-parameter
// unsharded tensors that the parameters point at; post-forward, ZeRO-3 (reshard_after_forward) frees them and registers
// pre-backward hooks on the outputs that gather again, ZeRO-2 keeps them; when the unit's
// gradients are complete, one flat fp32 reduce-scatter (averaged over all data-parallel ranks,
// then all-reduced across replicas for hybrid sharding) leaves the shard gradient on the
// parameter and the unsharded storage is freed. Gradient accumulation keeps unsharded gradients
// locally until the synchronising micro-step. With a low-precision param_dtype the gathered
// parameters are in that dtype (fp32 shards stay the master copy; gradients reduce in fp32).
// Collectives run in the same order on every rank: gathers in forward order, reduce-scatters in
// reverse forward order, leftovers at the end of backward.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/dist/comm.hpp"
#include "host/dist/fsdp/fsdp_state_dict.hpp"
#include "host/dist/fsdp/shard_layout.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::dist::fsdp {

struct FsdpOptions {
  int shard_size = 1;                          // ranks per shard group (parallelism.dp_shard)
  int replicate_size = 1;                      // shard groups (parallelism.dp_replicate)
  bool reshard_after_forward = true;           // true: ZeRO-3 / FULL_SHARD; false: ZeRO-2 / SHARD_GRAD_OP
  std::vector<std::string> wrap_modules;       // empty: the policy's declared unit types
  std::optional<c10::ScalarType> param_dtype;  // dtype of gathered parameters (bf16 mixed precision)
  // Where shards and gathered parameters live; unset: the parameters' own device. Set when the
  // parameters still view a checkpoint file on the CPU (only each rank's rows are copied over).
  std::optional<torch::Device> device;
};

// Where this rank sits and how parameters are laid out; what sharded checkpoints and plans need.
struct ShardingView {
  int shard_rank = 0, shard_size = 1;
  int replicate_rank = 0, replicate_size = 1;
  std::vector<UnitLayout> units;  // wrap units in module order, then "root"
  const ParamShardSpec* find(const std::string& param_name) const;
};

struct FsdpMemory {
  int64_t parameter_bytes = 0;  // sharded parameters (+ unsharded storage currently allocated)
  int64_t gradient_bytes = 0;   // shard gradients and accumulated unsharded gradients
};

class FsdpEngine {
 public:
  // Shards `policy` (already on its device, with identical values on every rank) in place.
  // `world` is the job's Comm; shard and replicate groups are split from it.
  FsdpEngine(policy::Policy& policy, FsdpOptions options, std::shared_ptr<Comm> world);
  ~FsdpEngine();
  FsdpEngine(const FsdpEngine&) = delete;
  FsdpEngine& operator=(const FsdpEngine&) = delete;

  const ShardingView& view() const { return view_; }
  const FsdpOptions& options() const { return options_; }
  // false during gradient-accumulation micro-steps: unsharded gradients accumulate locally.
  void set_sync(bool sync) { sync_ = sync; }
  // Global L2 norm of the shard gradients across the shard group; scales them to max_norm.
  double clip_grad_norm(double max_norm);
  // Collective over all ranks: full parameters and buffers by state_dict key (CPU, parameter dtype).
  // `keep` false: take part in the gathers only and get nothing back (a rank that writes no file
  // holds about one unit at a time; gather_full_state).
  // `include`: only these state-dict keys (gather_full_state's StateFilter; empty: all).
  std::vector<std::pair<std::string, torch::Tensor>> full_state_dict(bool keep = true, const StateFilter& include = {});
  // Sets this rank's shards (and buffers) from full tensors by state_dict key; no communication.
  // `include`: only these parameters need a tensor (load_full_state; empty: all).
  void load_full_state_dict(const std::vector<std::pair<std::string, torch::Tensor>>& state,
                            const StateFilter& include = {});
  // The module parameter holding this rank's padded shard of `param_name` (shape spec.shard_shape()).
  torch::Tensor local_shard(const std::string& param_name) const;
  FsdpMemory memory() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
  ShardingView view_;
  FsdpOptions options_;
  bool sync_ = true;
};

}  // namespace lrhost::dist::fsdp
