// The visible parts of meeting the other ranks over c10d's TCPStore: connecting to the store (or
// hosting it: rank 0 under torchrun) and waiting until every rank of the job has announced itself,
// both bounded by the rendezvous timeout and reported every LRHOST_WAIT_REPORT_S seconds while
// they wait (wait_report.hpp); and the per-group progress beacon that lets a timed-out collective name the ranks that
// never reached it. Used by c10d_comm.cpp only; the sentences come from wait_report.hpp.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/dist/rank_env.hpp"
#include "host/dist/wait_report.hpp"

namespace lrhost::dist {

// Connects to the job's store and waits for every rank, both within timing.rendezvous_timeout
// (one deadline for the two). The returned store's timeout is then env.timeout, for the backend's
// own rendezvous and later waits. Throws util::Error naming the missing store, nodes or ranks.
c10::intrusive_ptr<c10d::Store> rendezvous(const RankEnv& env, const WaitTiming& timing);

// Publishes how many collectives this rank has started in one group, so that a rank whose
// collective timed out can ask the store which peers are behind. The hot path (started()) is one
// relaxed atomic increment; a background thread with its own store connection publishes the count
// at most every `interval` and only when it changed. A round trip to the store per collective
// would cost ~0.1 ms on one node and far more across nodes, on every bucket of every step; a count
// at most `interval` stale is exact enough for a timeout that is many intervals long.
class ProgressBeacon {
 public:
  // `prefix` names the group in the store; `rank` is this rank's position in it.
  ProgressBeacon(const c10::intrusive_ptr<c10d::Store>& store, std::string prefix, int rank,
                 std::chrono::milliseconds interval);
  ~ProgressBeacon();
  ProgressBeacon(const ProgressBeacon&) = delete;
  ProgressBeacon& operator=(const ProgressBeacon&) = delete;

  // Counts a collective that starts now; returns its number in this group (1-based).
  std::int64_t started();

  // The last published count of every position 0..group_size-1 of the group (nullopt where none was
  // published), read through `store`. Throws when the store cannot be asked.
  std::vector<std::optional<std::int64_t>> published(c10d::Store& store, int group_size) const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  std::string prefix_;
  int rank_;
};

}  // namespace lrhost::dist
