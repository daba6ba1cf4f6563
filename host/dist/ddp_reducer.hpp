// The DDP gradient reducer. Parameters are grouped into buckets (bucket_plan.hpp); a
// post-accumulate-grad hook on every parameter marks its gradient ready during backward, and the
// moment a bucket is complete (and every earlier bucket has been launched) its gradients, divided
// by the world size, are copied into one flat buffer whose SUM all-reduce starts asynchronously.
// A callback queued on the autograd engine waits for all buckets at the end of backward and
// copies the averaged gradients back. Buckets always launch in index order, so every rank issues
// the same collective sequence.
//
// Parameters without a gradient on some rank count as zero there; each bucket also carries one
// "had a gradient" flag per parameter, so a parameter that no rank used keeps grad = None exactly
// as it would in a single process (no hang, no spurious weight-decay update).
#pragma once
#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "host/dist/bucket_plan.hpp"
#include "host/dist/comm.hpp"

namespace lrhost::dist {

struct DdpStats {
  std::size_t buckets = 0;
  std::size_t bytes_per_step = 0;                 // bytes all-reduced per synchronised backward
  std::size_t last_launched_during_backward = 0;  // buckets launched before backward ended, last step
  std::size_t synced_steps = 0;
};
// acc:ddp_stats()'s table: {buckets, bytes_per_step, launched_during_backward, synced_steps}.
inline void to_json(nlohmann::json& j, const DdpStats& s) {
  j = {{"buckets", s.buckets},
       {"bytes_per_step", s.bytes_per_step},
       {"launched_during_backward", s.last_launched_during_backward},
       {"synced_steps", s.synced_steps}};
}

class DdpReducer {
 public:
  DdpReducer(std::vector<torch::Tensor> params, std::shared_ptr<Comm> comm, BucketCaps caps = {});
  ~DdpReducer();
  DdpReducer(const DdpReducer&) = delete;
  DdpReducer& operator=(const DdpReducer&) = delete;

  // false during gradient-accumulation micro-steps: gradients accumulate locally, no traffic.
  void set_sync(bool sync) { sync_ = sync; }
  bool sync() const { return sync_; }
  DdpStats stats() const;
  const std::vector<std::vector<std::size_t>>& buckets() const { return bucket_params_; }

  // Called by the per-parameter hook (public for the hook type only).
  void on_grad_ready(std::size_t param_index);

 private:
  struct Bucket {
    torch::Tensor buffer;  // [sum of numels + one flag per parameter]
    std::vector<int64_t> offsets;
    int64_t flags_offset = 0;
    std::size_t pending = 0;  // gradients not yet ready this backward
    std::shared_ptr<CommWork> work;
    bool launched = false;
  };

  void launch_ready_buckets();  // under mutex_
  void launch(std::size_t bucket_index);
  void finalize();  // end of backward, engine callback
  void reset_iteration();

  std::vector<torch::Tensor> params_;
  std::shared_ptr<Comm> comm_;
  std::vector<std::vector<std::size_t>> bucket_params_;
  std::vector<std::pair<std::size_t, std::size_t>> location_;  // param -> (bucket, slot)
  std::vector<Bucket> buckets_;
  std::vector<bool> ready_;
  std::size_t next_to_launch_ = 0;
  bool in_backward_ = false;
  bool sync_ = true;
  std::size_t launched_during_backward_ = 0;
  DdpStats stats_;
  mutable std::mutex mutex_;
};

}  // namespace lrhost::dist
