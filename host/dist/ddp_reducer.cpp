// Bucketed, overlapped gradient all-reduce driven by autograd hooks.
#include "host/dist/ddp_reducer.hpp"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "host/util/error.hpp"

namespace lrhost::dist {
namespace {

// Forwards "this parameter's .grad is final for this backward" to the reducer.
struct ReadyHook final : torch::autograd::PostAccumulateGradHook {
  ReadyHook(DdpReducer* reducer, std::size_t index) : reducer_(reducer), index_(index) {}
  void operator()(const torch::autograd::Variable&) override { reducer_->on_grad_ready(index_); }
  DdpReducer* reducer_;
  std::size_t index_;
};

}  // namespace

DdpReducer::DdpReducer(std::vector<torch::Tensor> params, std::shared_ptr<Comm> comm, BucketCaps caps)
    : params_(std::move(params)), comm_(std::move(comm)) {
  for (const auto& p : params_)
    if (!p.requires_grad() || !p.is_leaf())
      throw util::ConfigError("DDP: every parameter must be a leaf tensor that requires grad");
  bucket_params_ = plan_buckets(params_, caps);
  location_.resize(params_.size());
  for (std::size_t b = 0; b < bucket_params_.size(); ++b) {
    Bucket bucket;
    int64_t offset = 0;
    for (std::size_t slot = 0; slot < bucket_params_[b].size(); ++slot) {
      std::size_t k = bucket_params_[b][slot];
      location_[k] = {b, slot};
      bucket.offsets.push_back(offset);
      offset += params_[k].numel();
    }
    bucket.flags_offset = offset;
    const auto& first = params_[bucket_params_[b].front()];
    bucket.buffer =
        torch::zeros({offset + static_cast<int64_t>(bucket_params_[b].size())}, first.options().requires_grad(false));
    stats_.bytes_per_step += static_cast<std::size_t>(bucket.buffer.numel()) * bucket.buffer.element_size();
    buckets_.push_back(std::move(bucket));
  }
  stats_.buckets = buckets_.size();
  for (std::size_t k = 0; k < params_.size(); ++k)
    torch::autograd::impl::set_post_acc_grad_hooks(params_[k], std::make_unique<ReadyHook>(this, k));
  reset_iteration();
}

DdpReducer::~DdpReducer() {
  for (auto& p : params_) torch::autograd::impl::post_acc_grad_hooks(p).reset();
}

void DdpReducer::reset_iteration() {
  ready_.assign(params_.size(), false);
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].pending = bucket_params_[b].size();
    buckets_[b].work.reset();
    buckets_[b].launched = false;
  }
  next_to_launch_ = 0;
  in_backward_ = false;
  launched_during_backward_ = 0;
}

void DdpReducer::on_grad_ready(std::size_t param_index) {
  if (!sync_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!in_backward_) {
    in_backward_ = true;
    // Runs once the whole backward pass is done, on the thread that called backward().
    torch::autograd::Engine::get_default_engine().queue_callback([this] { finalize(); });
  }
  if (ready_[param_index]) return;  // hooks fire once per backward; be defensive anyway
  ready_[param_index] = true;
  --buckets_[location_[param_index].first].pending;
  launch_ready_buckets();
}

void DdpReducer::launch_ready_buckets() {
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].pending == 0) {
    launch(next_to_launch_);
    ++launched_during_backward_;
    ++next_to_launch_;
  }
}

void DdpReducer::launch(std::size_t bucket_index) {
  Bucket& bucket = buckets_[bucket_index];
  const double inverse_world = 1.0 / comm_->size();
  torch::NoGradGuard no_grad;
  for (std::size_t slot = 0; slot < bucket_params_[bucket_index].size(); ++slot) {
    const auto& p = params_[bucket_params_[bucket_index][slot]];
    auto view = bucket.buffer.narrow(0, bucket.offsets[slot], p.numel());
    bool has_grad = p.grad().defined();
    if (has_grad)
      torch::mul_out(view, p.grad().reshape(-1), inverse_world);
    else
      view.zero_();
    bucket.buffer[bucket.flags_offset + static_cast<int64_t>(slot)].fill_(has_grad ? 1.0 : 0.0);
  }
  bucket.work = comm_->all_reduce_async(bucket.buffer, ReduceOp::sum);
  bucket.launched = true;
}

void DdpReducer::finalize() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.last_launched_during_backward = launched_during_backward_;
  // Buckets whose parameters got no gradient here still take part, in order, on every rank.
  while (next_to_launch_ < buckets_.size()) launch(next_to_launch_++);
  torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.work->wait();
    auto flags = bucket.buffer.narrow(0, bucket.flags_offset, static_cast<int64_t>(bucket_params_[b].size()))
                     .to(torch::kCPU, torch::kFloat64);
    for (std::size_t slot = 0; slot < bucket_params_[b].size(); ++slot) {
      auto& p = params_[bucket_params_[b][slot]];
      bool used_anywhere = flags[static_cast<int64_t>(slot)].item<double>() > 0.5;
      if (!used_anywhere) continue;  // stays None, as in a single process
      auto averaged = bucket.buffer.narrow(0, bucket.offsets[slot], p.numel()).view(p.sizes());
      if (p.grad().defined())
        p.mutable_grad().copy_(averaged);
      else
        p.mutable_grad() = averaged.clone();
    }
  }
  ++stats_.synced_steps;
  reset_iteration();
}

DdpStats DdpReducer::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace lrhost::dist
