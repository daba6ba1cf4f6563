// Comm over LibTorch's c10d: the rendezvous TCPStore client (or server, for rank 0 under
// torchrun/Slurm), and a Gloo (CPU) or NCCL (CUDA) backend used directly, without the
// ProcessGroup dispatcher. This file is the only user of c10d headers.
//
// Gloo headers: the torch wheel ships none, so Debian's libgloo-dev provides them. That is safe
// because ProcessGroupGloo.hpp only holds gloo types through pointers (shared_ptr/unique_ptr), so
// no object layout depends on the gloo version, and every gloo object is created inside libtorch.
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>

#include "host/dist/comm.hpp"
#include "host/util/error.hpp"

namespace lrhost::dist {
namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::max: return c10d::ReduceOp::MAX;
    case ReduceOp::min: return c10d::ReduceOp::MIN;
    default: return c10d::ReduceOp::SUM;
  }
}

// Turns a backend failure into an error that names the collective and the likely cause.
[[noreturn]] void collective_failed(const char* name, int rank, const std::exception& error,
                                    std::chrono::milliseconds timeout) {
  std::string what = error.what();
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) what = torch_error->what_without_backtrace();
  bool timed_out = what.find("imed out") != std::string::npos || what.find("imeout") != std::string::npos;
  if (timed_out)
    throw util::Error("collective '" + std::string(name) + "' on rank " + std::to_string(rank) + " timed out after " +
                          std::to_string(timeout.count() / 1000) + " s: another rank never reached it",
                      "a rank failed, skipped the collective (e.g. inside a main-process-only block) or is stuck; "
                      "raise --timeout only for genuinely slow steps");
  throw util::Error("collective '" + std::string(name) + "' failed on rank " + std::to_string(rank) + ": " + what,
                    "a peer rank probably exited; see the launcher's report for the first failure");
}

class C10dWork final : public CommWork {
 public:
  C10dWork(c10::intrusive_ptr<c10d::Work> work, const char* name, int rank, std::chrono::milliseconds timeout)
      : work_(std::move(work)), name_(name), rank_(rank), timeout_(timeout) {}
  void wait() override {
    try {
      work_->wait();
    } catch (const std::exception& error) {
      collective_failed(name_, rank_, error, timeout_);
    }
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  const char* name_;
  int rank_;
  std::chrono::milliseconds timeout_;
};

class C10dComm final : public Comm {
 public:
  // The job's world group: connects to (or hosts) the rendezvous store.
  C10dComm(const RankEnv& env, const torch::Device& device) : env_(env), device_(device) {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(env.master_port);
    store_options.isServer = env.rank == 0 && !env.store_hosted;
    store_options.numWorkers = std::nullopt;
    store_options.waitWorkers = false;
    store_options.timeout = env.timeout;
    try {
      store_ = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
    } catch (const std::exception& error) {
      throw util::Error("rank " + std::to_string(env.rank) + " could not reach the rendezvous store at " +
                            env.master_addr + ":" + std::to_string(env.master_port) + ": " + short_what(error),
                        "check MASTER_ADDR/MASTER_PORT, or start the job with `lrhost --nproc N`");
    }
    if (device.is_cuda()) c10::cuda::set_device(device.index());
    connect("lrhost/default_pg", env.rank, env.world_size);
  }

  // A subgroup over the same store: `env` carries the caller's group rank and size.
  C10dComm(const RankEnv& env, const torch::Device& device, c10::intrusive_ptr<c10d::Store> store,
           const std::string& prefix)
      : env_(env), device_(device), store_(std::move(store)) {
    connect(prefix, env.rank, env.world_size);
  }

  std::shared_ptr<Comm> new_group(const std::string& tag, const std::vector<int>& ranks) override {
    auto position = std::find(ranks.begin(), ranks.end(), env_.rank);
    if (position == ranks.end() || !std::is_sorted(ranks.begin(), ranks.end()) || ranks.back() >= size())
      throw util::ConfigError("new_group '" + tag + "': rank " + std::to_string(env_.rank) +
                              " asked for a group it is not a member of, or the ranks are not ascending ranks of this job");
    if (ranks.size() == 1) return make_local_comm();
    RankEnv group_env = env_;
    group_env.rank = static_cast<int>(position - ranks.begin());
    group_env.world_size = static_cast<int>(ranks.size());
    if (env_.single_node()) group_env.local_world_size = group_env.world_size;  // still loopback only
    std::string members;
    for (int r : ranks) members += "_" + std::to_string(r);
    return std::make_shared<C10dComm>(group_env, device_, store_, "lrhost/group/" + tag + members);
  }

  int rank() const override { return env_.rank; }
  int size() const override { return env_.world_size; }
  std::string backend_name() const override {
    return device_.is_cuda() && env_.cuda_backend == "nccl" ? "nccl" : "gloo";
  }

  std::shared_ptr<CommWork> all_reduce_async(torch::Tensor& tensor, ReduceOp op) override {
    check_collective("all_reduce");
    std::vector<torch::Tensor> tensors{tensor};
    c10d::AllreduceOptions options;
    options.reduceOp = to_c10d(op);
    return start("all_reduce", [&] { return backend_->allreduce(tensors, options); });
  }

  void broadcast(torch::Tensor& tensor, int root) override {
    check_collective("broadcast");
    if (root < 0 || root >= size())
      throw util::ConfigError("broadcast root " + std::to_string(root) + " is not a rank of this " +
                              std::to_string(size()) + "-rank job");
    std::vector<torch::Tensor> tensors{tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    start("broadcast", [&] { return backend_->broadcast(tensors, options); })->wait();
  }

  std::shared_ptr<CommWork> all_gather_into_async(torch::Tensor& out, const torch::Tensor& in) override {
    check_collective("all_gather");
    auto input = in.contiguous().view(-1);
    auto output = out.view(-1);
    return start("all_gather", [&] { return backend_->_allgather_base(output, input); });
  }

  void reduce_scatter_into(torch::Tensor& out, const torch::Tensor& in) override {
    check_collective("reduce_scatter");
    // Gloo checks shapes on dim 0: both sides travel flat.
    auto input = in.contiguous().view(-1);
    auto output = out.view(-1);
    start("reduce_scatter", [&] { return backend_->_reduce_scatter_base(output, input); })->wait();
  }

  void barrier() override {
    check_collective("barrier");
    // A barrier is an all_reduce of one element: Gloo's and NCCL's barriers differ in device
    // handling, an all_reduce behaves the same everywhere and honours the timeout.
    auto token = torch::zeros({1}, torch::TensorOptions().device(device_));
    all_reduce(token);
  }

  void shutdown() override {
    if (shut_down_) return;
    shut_down_ = true;
    try {
      backend_->shutdown();
    } catch (const std::exception& error) {
      spdlog::warn("process group shutdown: {}", short_what(error));
    }
  }

  ~C10dComm() override { shutdown(); }

 private:
  static std::string short_what(const std::exception& error) {
    if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) return torch_error->what_without_backtrace();
    return error.what();
  }


  void connect(const std::string& prefix, int rank, int size) {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
    if (device_.is_cuda() && env_.cuda_backend == "nccl") {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = env_.timeout;
      auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, rank, size, options);
      nccl->eagerConnectSingleDevice(device_);
      backend_ = nccl;
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(env_.timeout);
      // Single node: loopback only. Several nodes: this host's resolvable address.
      options->devices.push_back(env_.single_node() ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                                    : c10d::ProcessGroupGloo::createDefaultDevice());
      backend_ = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
    }
  }

  template <class Launch>
  std::shared_ptr<CommWork> start(const char* name, Launch&& launch) {
    try {
      return std::make_shared<C10dWork>(launch(), name, env_.rank, env_.timeout);
    } catch (const std::exception& error) {
      collective_failed(name, env_.rank, error, env_.timeout);
    }
  }

  RankEnv env_;
  torch::Device device_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  bool shut_down_ = false;
};

}  // namespace

std::shared_ptr<Comm> make_c10d_comm(const RankEnv& env, const torch::Device& device) {
  return std::make_shared<C10dComm>(env, device);
}

}  // namespace lrhost::dist
