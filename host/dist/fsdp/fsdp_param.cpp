// One sharded parameter: its shard copy-in, the unsharded storage freed and allocated in place, and
// its gradient bookkeeping over a backward.
#include "host/dist/fsdp/fsdp_param.hpp"

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

}  // namespace

FsdpParam::FsdpParam(const ParamShardSpec& spec, torch::Tensor param, const torch::Tensor& values,
                     const torch::Tensor& flat_shard, int64_t offset, int shard_rank, int shard_size,
                     c10::ScalarType gather_dtype)
    : spec_(spec), param_(std::move(param)) {
  shard_ = flat_shard.narrow(0, offset, spec_.shard_numel()).view(spec_.shard_shape());
  shard_.copy_(shard_of(spec_, values.detach(), shard_rank));
  // On the shard's device: the parameter may still view a checkpoint file on the CPU.
  padded_ = torch::empty({shard_size * spec_.rows_per_rank, spec_.row_numel},
                         param_.options().device(flat_shard.device()).dtype(gather_dtype).requires_grad(false));
  unsharded_ = padded_.narrow(0, 0, spec_.rows).view(spec_.shape);
  free_storage(padded_);
  param_.set_data(shard_);
}

void FsdpParam::allocate_unsharded() {
  allocate_storage(padded_);
}
void FsdpParam::free_unsharded() {
  free_storage(padded_);
}

void FsdpParam::stash_shard_grad() {
  auto& grad = param_.mutable_grad();
  if (grad.defined() && !stashed_shard_grad_.defined()) {
    stashed_shard_grad_ = grad;
    grad = torch::Tensor();
  }
}

void FsdpParam::restore_stashed_grad() {
  if (!stashed_shard_grad_.defined()) return;
  param_.mutable_grad() = stashed_shard_grad_;
  stashed_shard_grad_ = torch::Tensor();
}

void FsdpParam::accumulate_unsharded_grad() {
  auto& grad = param_.mutable_grad();
  if (!grad.defined()) return;
  auto as_fp32 = grad.to(torch::kFloat32);
  accumulated_ = accumulated_.defined() ? accumulated_.add_(as_fp32) : as_fp32.clone();
  grad = torch::Tensor();
}

torch::Tensor FsdpParam::take_unsharded_grad() {
  auto grad = param_.grad();
  auto total = accumulated_;
  if (grad.defined()) total = total.defined() ? total.add_(grad.to(torch::kFloat32)) : grad;
  torch::Tensor rows;
  if (total.defined()) rows = total.reshape({spec_.rows, spec_.row_numel});
  param_.mutable_grad() = torch::Tensor();
  accumulated_ = torch::Tensor();
  return rows;
}

void FsdpParam::set_shard_grad(const torch::Tensor& shard_grad) {
  had_stash_ = stashed_shard_grad_.defined();
  param_.mutable_grad() = stashed_shard_grad_.defined() ? stashed_shard_grad_.add_(shard_grad) : shard_grad;
  stashed_shard_grad_ = torch::Tensor();
}

void FsdpParam::drop_unused_grad(bool any_rank_had_grad) {
  if (!any_rank_had_grad && !had_stash_) param_.mutable_grad() = torch::Tensor();
}

}  // namespace lrhost::dist::fsdp
