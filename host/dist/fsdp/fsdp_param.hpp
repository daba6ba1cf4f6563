// One FSDP-sharded parameter (FSDP2's FSDPParam): the module's parameter tensor P, this rank's padded
// shard of it, and the unsharded tensor of the full shape that P points at while its unit is gathered.
//
// Parameter states. P (whose identity the optimizer keeps) points either at its shard (between steps)
// or at an "unsharded" tensor of the full shape whose storage FSDP allocates on gather and frees on
// reshard. Freeing the storage instead of dropping the tensor matters: autograd keeps views of P's
// full data (e.g. the transposed weight of a linear), and they share that storage, so refilling it
// before backward makes every saved view valid again, while between forward and backward (ZeRO-3)
// the memory really is released. Data is only ever written into the unsharded tensor, never into P,
// so P's version counter (checked by autograd) never moves. When to gather, free or reshard is the
// unit's decision (fsdp_param_group.hpp); this class holds the tensors and the per-parameter
// gradient bookkeeping of one backward.
#pragma once
#include <torch/torch.h>

#include "host/dist/fsdp/shard_layout.hpp"

namespace lrhost::dist::fsdp {

class FsdpParam {
 public:
  // Copies rank `shard_rank`'s padded shard of `values` (the parameter's values: `param` itself, or
  // a checkpoint tensor of its shape in another dtype, cast by the copy) into its place in the unit's
  // flat shard, [offset, offset + spec.shard_numel()), makes the unsharded tensor in `gather_dtype`
  // with its storage freed, and points `param` at the shard.
  FsdpParam(const ParamShardSpec& spec, torch::Tensor param, const torch::Tensor& values,
            const torch::Tensor& flat_shard, int64_t offset, int shard_rank, int shard_size,
            c10::ScalarType gather_dtype);

  const ParamShardSpec& spec() const { return spec_; }
  // The module's parameter tensor.
  const torch::Tensor& param() const { return param_; }
  // This rank's padded shard (fp32 master), shaped spec.shard_shape(); a view of the unit's flat shard.
  const torch::Tensor& shard() const { return shard_; }
  // All ranks' rows in the gather dtype, [shard_size * rows_per_rank, row_numel]: row block r is
  // rank r's shard, so one split of the unit's all-gather output fills it. The unsharded tensor is
  // its first `rows` rows in the parameter's shape; the two share a storage.
  const torch::Tensor& padded() const { return padded_; }
  // The unsharded fp32 gradient kept over no-sync micro-steps (undefined when none).
  const torch::Tensor& accumulated() const { return accumulated_; }

  void allocate_unsharded();
  void free_unsharded();
  // Which tensor P points at; neither writes into P.
  void use_unsharded() { param_.set_data(unsharded_); }
  void use_shard() { param_.set_data(shard_); }

  // --- gradients ------------------------------------------------------------------------------
  // Sets a gradient left from an earlier step (not zeroed, so shard-shaped) aside, so autograd
  // accumulates this backward's unsharded gradient from scratch.
  void stash_shard_grad();
  // Puts the set-aside shard gradient back as P's gradient.
  void restore_stashed_grad();
  // No-sync micro-step: moves P's unsharded gradient into the fp32 accumulated one.
  void accumulate_unsharded_grad();
  // P's unsharded gradient plus what earlier micro-steps accumulated, as [rows, row_numel]
  // (undefined when there is neither); P's gradient and the accumulated one are cleared.
  torch::Tensor take_unsharded_grad();
  // Sets P's gradient to `shard_grad`, added to the set-aside gradient when there is one.
  void set_shard_grad(const torch::Tensor& shard_grad);
  // A parameter no rank produced a gradient for keeps grad = None (as in one process). Gradients
  // of earlier, unzeroed steps stay; a fresh all-zero reduction does not count.
  void drop_unused_grad(bool any_rank_had_grad);

 private:
  ParamShardSpec spec_;
  torch::Tensor param_, shard_, padded_, unsharded_;
  torch::Tensor stashed_shard_grad_;  // grad from before this forward (not zeroed)
  torch::Tensor accumulated_;         // unsharded grad kept over no-sync micro-steps
  bool had_stash_ = false;
};

}  // namespace lrhost::dist::fsdp
