// Comm: the collectives lrhost uses (all_reduce, broadcast, all_gather_into, reduce_scatter_into,
// barrier), over c10d's Gloo (CPU tensors) or NCCL (CUDA tensors). It is the only code that touches
// c10d, so LibTorch API changes stay in one file (c10d_comm.cpp). Averages are computed by the
// callers as "divide locally, then SUM" because Gloo has no AVG. Every blocking wait is bounded by
// the job's collective timeout, and a timeout becomes an error that says which collective on which
// rank was waiting, so a rank stuck in a collective is reported instead of hanging.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host/dist/rank_env.hpp"

#include "host/util/name_table.hpp"

namespace lrhost::dist {

// mean: each rank divides by the rank count, then the ranks sum (Gloo has no AVG; one arithmetic on
// every backend); floating-point tensors only.
enum class ReduceOp { sum, mean, max, min };
inline constexpr util::NameTable kReduceOpNames{
    std::array{std::pair{ReduceOp::sum, "sum"}, std::pair{ReduceOp::mean, "mean"}, std::pair{ReduceOp::max, "max"},
               std::pair{ReduceOp::min, "min"}}};
// What every Comm does before an all-reduce with `op` over `ranks` ranks (the division of mean).
void prepare_all_reduce(torch::Tensor& tensor, ReduceOp op, int ranks);

// A collective in flight; wait() blocks until its result is usable (or throws).
class CommWork {
 public:
  virtual ~CommWork() = default;
  virtual void wait() = 0;
};

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend_name() const = 0;

  virtual std::shared_ptr<CommWork> all_reduce_async(torch::Tensor& tensor, ReduceOp op) = 0;
  void all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::sum) { all_reduce_async(tensor, op)->wait(); }
  // In place: every rank ends with root's values.
  virtual void broadcast(torch::Tensor& tensor, int root) = 0;
  // out = concatenation of every rank's `in` along dim 0 (out.numel() == size() * in.numel()).
  virtual std::shared_ptr<CommWork> all_gather_into_async(torch::Tensor& out, const torch::Tensor& in) = 0;
  void all_gather_into(torch::Tensor& out, const torch::Tensor& in) { all_gather_into_async(out, in)->wait(); }
  // out = this rank's chunk of the SUM over ranks of `in` (in.numel() == size() * out.numel()).
  virtual void reduce_scatter_into(torch::Tensor& out, const torch::Tensor& in) = 0;
  // A Comm over a subset of this one's ranks (FSDP's shard and replicate groups). Only the member
  // ranks call it, each with the same `tag` and `ranks` (this Comm's rank numbers, ascending); the
  // new Comm's rank is the caller's position in `ranks`.
  virtual std::shared_ptr<Comm> new_group(const std::string& tag, const std::vector<int>& ranks) = 0;
  virtual void barrier() = 0;
  // Flushes and tears the backend down; called once on every rank at the end of a run.
  virtual void shutdown() {}

  // Called with the collective's name before each one; the accelerator uses it to refuse
  // collectives inside a main-process-only block (which would deadlock the other ranks).
  // Only the current owner's clear takes effect, so an old accelerator being destroyed cannot
  // remove the guard of a newer one.
  void set_collective_guard(const void* owner, std::function<void(const char*)> guard) {
    guard_owner_ = owner;
    guard_ = std::move(guard);
  }
  void clear_collective_guard(const void* owner) {
    if (guard_owner_ != owner) return;
    guard_owner_ = nullptr;
    guard_ = nullptr;
  }

 protected:
  void check_collective(const char* name) const {
    if (guard_) guard_(name);
  }

 private:
  std::function<void(const char*)> guard_;
  const void* guard_owner_ = nullptr;
};

// The process-wide Comm for the job described by `env` on `device` (CPU: Gloo, CUDA: NCCL, or
// Gloo when env.cuda_backend says so).
// A single-process job gets a Comm whose collectives are identities and need no rendezvous.
// Created once per process; later calls return the same object.
std::shared_ptr<Comm> process_comm(const RankEnv& env, const torch::Device& device);

// Shuts the process-wide Comm down and drops it, so its backend (NCCL's watchdog threads included)
// is destroyed while CUDA is still alive: main() calls it after the recipe. Left to static
// destruction at exit, NCCL's threads could touch a CUDA runtime that is already unloading (seen on
// an H100 as aborts with "CUDA error: no error" right after short NCCL jobs ended).
void shutdown_process_comm();

// A Comm of one rank: collectives are identities.
std::shared_ptr<Comm> make_local_comm();

// Builds the c10d-backed Comm (c10d_comm.cpp).
std::shared_ptr<Comm> make_c10d_comm(const RankEnv& env, const torch::Device& device);

}  // namespace lrhost::dist
