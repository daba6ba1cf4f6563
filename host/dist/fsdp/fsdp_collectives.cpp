// FSDP's process groups, flat all-gather and packed reduce-scatter with their copy-outs, and the
// clipping norm, over Comm.
#include "host/dist/fsdp/fsdp_collectives.hpp"

#include <optional>
#include <string>

#include "host/dist/dp_layout.hpp"

namespace lrhost::dist::fsdp {

FsdpComms make_fsdp_comms(std::shared_ptr<Comm> world, int shard_size, int replicate_size) {
  const int world_size = world->size(), rank = world->rank();
  const int shard = shard_size, replicate = replicate_size;
  check_dp_layout(shard, replicate, world_size);
  FsdpComms comms;
  comms.shard_size = shard;
  comms.replicate_size = replicate;
  comms.shard_rank = rank % shard;
  comms.replicate_rank = rank / shard;
  // Every rank creates its own groups in the same order: first its shard group, then its
  // replicate group (c10d subgroups only need their members).
  std::vector<int> shard_ranks, replicate_ranks;
  for (int r = 0; r < shard; ++r) shard_ranks.push_back(comms.replicate_rank * shard + r);
  for (int g = 0; g < replicate; ++g) replicate_ranks.push_back(g * shard + comms.shard_rank);
  comms.shard = shard == world_size ? world : world->new_group("fsdp_shard", shard_ranks);
  comms.replicate = replicate == world_size ? world : world->new_group("fsdp_replicate", replicate_ranks);
  comms.world = std::move(world);
  return comms;
}

std::shared_ptr<CommWork> all_gather_flat_async(Comm& comm, const UnitLayout& layout, const torch::Tensor& input,
                                                torch::Tensor& out) {
  out = torch::empty({layout.shard_size * layout.shard_numel()}, input.options());
  return comm.all_gather_into_async(out, input);
}

torch::Tensor per_rank_rows(const torch::Tensor& out, const UnitLayout& layout) {
  return out.view({layout.shard_size, layout.shard_numel()});
}

void copy_out_all_gather(const torch::Tensor& out, const UnitLayout& layout, const std::vector<torch::Tensor>& padded) {
  // Row r of the output is rank r's flat shard; its column block i is rank r's rows of parameter
  // i, which is row block r of padded[i]: one split copy fills every parameter.
  auto per_rank = per_rank_rows(out, layout);
  std::vector<torch::Tensor> targets;
  std::vector<int64_t> sizes;
  for (std::size_t i = 0; i < padded.size(); ++i) {
    targets.push_back(padded[i].view({layout.shard_size, layout.params[i].shard_numel()}));
    sizes.push_back(layout.params[i].shard_numel());
  }
  at::split_with_sizes_copy_out(targets, per_rank, sizes, 1);
}

torch::Tensor reduce_scatter_grads(std::vector<torch::Tensor> grads, const UnitLayout& layout,
                                   const torch::Tensor& flat_shard, const FsdpComms& comms) {
  const int64_t shard_numel = layout.shard_numel();
  const auto n = static_cast<int64_t>(grads.size());
  const int groups = comms.shard_size;
  std::vector<std::size_t> missing;
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined()) missing.push_back(i);
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
  auto options = flat_shard.options().dtype(dtype);
  for (auto& g : grads) g = g.defined() ? g.to(dtype) : g;
  for (std::size_t i : missing) grads[i] = torch::zeros({layout.params[i].rows, layout.params[i].row_numel}, options);
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
  input.narrow(1, 0, shard_numel).div_(static_cast<double>(comms.world->size()));
  auto output = torch::empty({shard_numel + n}, options);
  if (groups > 1)
    comms.shard->reduce_scatter_into(output, input);
  else
    output.copy_(input[0]);
  if (comms.replicate_size > 1) comms.replicate->all_reduce(output);
  return output;
}

std::vector<torch::Tensor> copy_out_reduce_scatter(const torch::Tensor& output, const UnitLayout& layout,
                                                   const torch::Tensor& flat_shard) {
  // Each gradient is its own tensor, not a view of one buffer: optimizers detach and zero
  // gradients in place, which views do not allow. One split copy fills them all.
  std::vector<torch::Tensor> shard_grads;
  std::vector<int64_t> sizes;
  for (const auto& spec : layout.params) {
    shard_grads.push_back(torch::empty(spec.shard_shape(), flat_shard.options()));
    sizes.push_back(spec.shard_numel());
  }
  std::vector<torch::Tensor> flat_grads;
  for (auto& g : shard_grads) flat_grads.push_back(g.view(-1));
  at::split_with_sizes_copy_out(flat_grads, output.narrow(0, 0, layout.shard_numel()).to(flat_shard.scalar_type()),
                                sizes, 0);
  return shard_grads;
}

double clip_shard_grad_norm(Comm& shard_comm, const std::vector<torch::Tensor>& grads, const torch::Device& device,
                            double max_norm) {
  auto sum_sq = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  // Multi-tensor kernels: a handful of launches for all gradients instead of several per tensor.
  if (!grads.empty()) sum_sq += torch::stack(at::_foreach_norm(grads, 2, torch::kFloat32)).pow(2).sum();
  // Replicas hold identical shards: the norm sums over the shard group only.
  shard_comm.all_reduce(sum_sq);
  auto total = sum_sq.sqrt();
  auto coefficient = torch::clamp_max((total + 1e-6).reciprocal() * max_norm, 1.0);
  if (!grads.empty()) at::_foreach_mul_(grads, coefficient.squeeze());
  return total.item<double>();
}

}  // namespace lrhost::dist::fsdp
