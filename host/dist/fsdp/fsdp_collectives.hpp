// The collectives FSDP runs, over the Comm layer (host/dist/comm.hpp), in the shape of FSDP2's
// _fsdp_collectives.py: the shard and replicate groups split from the job's Comm; one flat all-gather
// of a unit's flat shard and its copy-out into per-parameter tensors; one reduce-scatter of a unit's
// gradients packed with _chunk_cat (with per-parameter "had a gradient" flags), all-reduced across
// replicas for hybrid sharding, and its copy-out into shard gradients; and the gradient norm over the
// shard group for clipping. Each is a collective: every rank of the group calls it in the same order.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "host/dist/comm.hpp"
#include "host/dist/fsdp/shard_layout.hpp"

namespace lrhost::dist::fsdp {

// The groups FSDP communicates over and where this rank sits in them.
struct FsdpComms {
  std::shared_ptr<Comm> world, shard, replicate;
  int shard_rank = 0, shard_size = 1;
  int replicate_rank = 0, replicate_size = 1;
};

// Splits `world` into shard groups of `shard_size` consecutive ranks and `replicate_size` replicas;
// shard_size x replicate_size must be world->size(). A group spanning all ranks is `world` itself.
FsdpComms make_fsdp_comms(std::shared_ptr<Comm> world, int shard_size, int replicate_size);

// Launches the all-gather of this rank's flat shard `input` (layout.shard_numel() elements) into a
// new `out` of layout.shard_size times as many, in input's dtype and on its device.
std::shared_ptr<CommWork> all_gather_flat_async(Comm& comm, const UnitLayout& layout, const torch::Tensor& input,
                                                torch::Tensor& out);
// The all-gather output as [shard_size, shard_numel]: row r is rank r's flat shard.
torch::Tensor per_rank_rows(const torch::Tensor& out, const UnitLayout& layout);
// Copy-out: fills each parameter's `padded` tensor (allocated, [shard_size * rows_per_rank,
// row_numel], in the output's dtype) from a finished all-gather output, with one split copy.
void copy_out_all_gather(const torch::Tensor& out, const UnitLayout& layout, const std::vector<torch::Tensor>& padded);

// Reduces a unit's gradients: `grads[i]` is parameter i's gradient as [rows, row_numel], undefined
// when this rank has none. Returns this rank's fp32 shard of the gradients averaged over all
// data-parallel ranks, [layout.shard_numel()], followed by one value per parameter: the number of
// ranks that had a gradient for it. `flat_shard` gives the device.
torch::Tensor reduce_scatter_grads(std::vector<torch::Tensor> grads, const UnitLayout& layout,
                                   const torch::Tensor& flat_shard, const FsdpComms& comms);
// Copy-out: reduce_scatter_grads' output as one shard gradient per parameter, shaped shard_shape(),
// in the dtype and on the device of `flat_shard`.
std::vector<torch::Tensor> copy_out_reduce_scatter(const torch::Tensor& output, const UnitLayout& layout,
                                                   const torch::Tensor& flat_shard);

// Global L2 norm of `grads` (shard gradients on `device`) over the shard group; scales them in place
// so that it is at most `max_norm`. Returns the norm before scaling.
double clip_shard_grad_norm(Comm& shard_comm, const std::vector<torch::Tensor>& grads, const torch::Device& device,
                            double max_norm);

}  // namespace lrhost::dist::fsdp
