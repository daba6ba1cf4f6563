// Comm over LibTorch's c10d: the rendezvous TCPStore client (or server, for rank 0 under
// torchrun/Slurm; c10d_rendezvous.cpp), and a Gloo (CPU) or NCCL (CUDA) backend used directly,
// without the ProcessGroup dispatcher. This file and c10d_rendezvous.cpp are the only users of c10d
// headers (comm.hpp's "c10d_comm.cpp" includes its rendezvous half). A collective's timeout names
// the ranks that never reached it, from the progress every rank publishes (ProgressBeacon).
//
// Gloo headers: the torch wheel ships none, so Debian's libgloo-dev provides them. That is safe
// because ProcessGroupGloo.hpp only holds gloo types through pointers (shared_ptr/unique_ptr), so
// no object layout depends on the gloo version, and every gloo object is created inside libtorch.
#include <c10/cuda/CUDAFunctions.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "host/dist/c10d_rendezvous.hpp"
#include "host/dist/comm.hpp"
#include "host/dist/wait_report.hpp"
#include "host/util/error.hpp"

namespace lrhost::dist {
namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return c10d::ReduceOp::MAX;
    case ReduceOp::min:
      return c10d::ReduceOp::MIN;
    case ReduceOp::sum:
    case ReduceOp::mean:  // divided first (prepare_all_reduce)
      break;
  }
  return c10d::ReduceOp::SUM;
}

// What a collective needs to explain its own failure: the group's store and progress beacon (to
// name the ranks that never reached it) and the job's rank number of every group position.
struct GroupContext {
  c10::intrusive_ptr<c10d::Store> store;
  std::unique_ptr<ProgressBeacon> beacon;
  std::vector<int> members;  // job rank of each group position
  int position = 0;          // this rank's position in the group
  int job_rank = 0;
  std::chrono::milliseconds timeout{0};
};

std::string short_what(const std::exception& error) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) return torch_error->what_without_backtrace();
  return error.what();
}

// "rank 1 never reached it (...)", from the progress the other ranks published; the old vague
// words when the store cannot be asked (it went away with the launcher, say).
std::string who_is_missing(const GroupContext& group, std::int64_t number) {
  if (!group.beacon) return "another rank never reached it";
  try {
    auto published = group.beacon->published(*group.store, static_cast<int>(group.members.size()));
    std::vector<PeerProgress> peers;
    for (std::size_t i = 0; i < published.size(); ++i)
      if (static_cast<int>(i) != group.position) peers.push_back({group.members[i], published[i]});
    return laggards_text(number, peers);
  } catch (const std::exception& error) {
    return "another rank never reached it (the store could not say which: " + short_what(error) + ")";
  }
}

// Turns a backend failure into an error that names the collective and the likely cause: for a
// timeout, the ranks that never reached the collective; otherwise the backend's words, which say
// whether a peer went away (the launcher's report then lists this error as a consequence).
[[noreturn]] void collective_failed(const char* name, std::int64_t number, const GroupContext& group,
                                    const std::exception& error) {
  std::string what = short_what(error);
  bool timed_out = what.find("imed out") != std::string::npos || what.find("imeout") != std::string::npos;
  if (timed_out)
    throw util::Error("collective '" + std::string(name) + "' on rank " + std::to_string(group.job_rank) +
                          " timed out after " + std::to_string(group.timeout.count() / 1000) +
                          " s: " + who_is_missing(group, number),
                      "a rank failed, skipped the collective (e.g. inside a main-process-only block) or is stuck; "
                      "raise --timeout only for genuinely slow steps");
  throw util::Error(
      "collective '" + std::string(name) + "' failed on rank " + std::to_string(group.job_rank) + ": " + what,
      "a peer rank probably exited; see the launcher's report for the first failure");
}

class C10dWork final : public CommWork {
 public:
  C10dWork(c10::intrusive_ptr<c10d::Work> work, const char* name, std::int64_t number,
           std::shared_ptr<const GroupContext> group, bool gloo)
      : work_(std::move(work)), name_(name), number_(number), group_(std::move(group)), gloo_(gloo) {}
  void wait() override {
    try {
      work_->wait();
    } catch (const std::exception& error) {
      collective_failed(name_, number_, *group_, error);
    }
    if (gloo_) await_worker_release();
  }

 private:
  // Gloo's worker thread completes the work, then drops its own reference to it (and so to the
  // tensors it holds) a moment later. Waiting for that here makes the thread that waited the one
  // that frees a collective's buffers: they are gone before its next allocation (an FSDP save gathers
  // unit after unit into fresh buffers), and the thread's tensor-bytes meter sees the free
  // (policy/tensor_bytes_meter.hpp). Measured: no change in a 2-rank all-reduce's time (300-400 us
  // either way); the worker lets go within microseconds. Bounded (1 s, for a worker descheduled on
  // a loaded machine): a worker that keeps it longer only costs that.
  void await_worker_release() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (work_.use_count() > 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  }

  c10::intrusive_ptr<c10d::Work> work_;
  const char* name_;
  std::int64_t number_;
  std::shared_ptr<const GroupContext> group_;
  bool gloo_;
};

class C10dComm final : public Comm {
 public:
  // The job's world group: connects to (or hosts) the rendezvous store and waits for every rank
  // (c10d_rendezvous.hpp), then builds the backend.
  C10dComm(const RankEnv& env, const torch::Device& device) : env_(env), device_(device) {
    store_ = rendezvous(env, wait_timing_from_environment());
    if (device.is_cuda()) c10::cuda::set_device(device.index());
    std::vector<int> everyone(static_cast<std::size_t>(env.world_size));
    std::iota(everyone.begin(), everyone.end(), 0);
    connect("lrhost/default_pg", everyone, env.rank);
  }

  // A subgroup over the same store: `env` carries the caller's group rank and size, `members` the
  // job ranks of the group's positions.
  C10dComm(const RankEnv& env, const torch::Device& device, c10::intrusive_ptr<c10d::Store> store,
           const std::string& prefix, const std::vector<int>& members, int job_rank)
      : env_(env), device_(device), store_(std::move(store)) {
    connect(prefix, members, job_rank);
  }

  std::shared_ptr<Comm> new_group(const std::string& tag, const std::vector<int>& ranks) override {
    auto position = std::find(ranks.begin(), ranks.end(), env_.rank);
    if (position == ranks.end() || !std::is_sorted(ranks.begin(), ranks.end()) || ranks.back() >= size())
      throw util::ConfigError(
          "new_group '" + tag + "': rank " + std::to_string(env_.rank) +
          " asked for a group it is not a member of, or the ranks are not ascending ranks of this job");
    if (ranks.size() == 1) return make_local_comm();
    RankEnv group_env = env_;
    group_env.rank = static_cast<int>(position - ranks.begin());
    group_env.world_size = static_cast<int>(ranks.size());
    if (env_.single_node()) group_env.local_world_size = group_env.world_size;  // still loopback only
    std::string members;
    std::vector<int> job_ranks;
    for (int r : ranks) {
      members += "_" + std::to_string(r);
      job_ranks.push_back(group_->members.at(static_cast<std::size_t>(r)));
    }
    return std::make_shared<C10dComm>(group_env, device_, store_, "lrhost/group/" + tag + members, job_ranks,
                                      group_->job_rank);
  }

  int rank() const override { return env_.rank; }
  int size() const override { return env_.world_size; }
  std::string backend_name() const override {
    return device_.is_cuda() && env_.cuda_backend == "nccl" ? "nccl" : "gloo";
  }

  std::shared_ptr<CommWork> all_reduce_async(torch::Tensor& tensor, ReduceOp op) override {
    check_collective("all_reduce");
    prepare_all_reduce(tensor, op, size());
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
    if (group_) group_->beacon.reset();  // its thread stops while the store still answers
    try {
      backend_->shutdown();
    } catch (const std::exception& error) {
      spdlog::warn("process group shutdown: {}", short_what(error));
    }
  }

  ~C10dComm() override { shutdown(); }

 private:
  // Builds the backend of the group `prefix`; this rank is at env_.rank of env_.world_size positions.
  void connect(const std::string& prefix, const std::vector<int>& members, int job_rank) {
    int rank = env_.rank, size = env_.world_size;
    auto group = std::make_shared<GroupContext>();
    group->store = store_;
    group->members = members;
    group->position = rank;
    group->job_rank = job_rank;
    group->timeout = env_.timeout;
    // A count at most a fifth of the timeout old is fresh enough to tell who never arrived.
    auto interval = std::clamp(env_.timeout / 5, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
    group->beacon = std::make_unique<ProgressBeacon>(store_, prefix, rank, interval);
    group_ = group;
    try {
      build_backend(prefix, rank, size);
    } catch (const std::exception& error) {
      // c10d's exceptions carry a long C++ backtrace; the user needs the sentence.
      throw util::Error("rank " + std::to_string(job_rank) + " could not set up the " + backend_name() +
                            " process group '" + prefix + "': " + short_what(error),
                        "another rank probably failed while the group was being built; see the launcher's report");
    }
  }

  void build_backend(const std::string& prefix, int rank, int size) {
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
    std::int64_t number = group_->beacon ? group_->beacon->started() : 0;
    try {
      return std::make_shared<C10dWork>(launch(), name, number, group_, backend_name() == "gloo");
    } catch (const std::exception& error) {
      collective_failed(name, number, *group_, error);
    }
  }

  RankEnv env_;
  torch::Device device_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  std::shared_ptr<GroupContext> group_;
  bool shut_down_ = false;
};

}  // namespace

std::shared_ptr<Comm> make_c10d_comm(const RankEnv& env, const torch::Device& device) {
  return std::make_shared<C10dComm>(env, device);
}

}  // namespace lrhost::dist
