// The words of waiting: what a rank says while the rendezvous waits for missing ranks or for the
// store, and the errors that end the wait, naming the missing nodes or ranks and the command that
// should have started them; and, after a collective timed out, which ranks never reached it. Pure
// text from plain numbers (no c10d), so every sentence is unit-tested; c10d_rendezvous.cpp and
// c10d_comm.cpp gather the numbers from the store.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "host/dist/rank_env.hpp"
#include "host/util/error.hpp"

namespace lrhost::dist {

// How long the rendezvous waits for the store and for every rank, and how often a waiting rank says
// so. The rendezvous has its own timeout, shorter than a collective's: a node that was never started
// should be reported within minutes, not after an allowance meant for a long step.
struct WaitTiming {
  std::chrono::milliseconds rendezvous_timeout{120'000};  // LRHOST_RENDEZVOUS_TIMEOUT_S (--rendezvous-timeout)
  std::chrono::milliseconds report_interval{10'000};      // LRHOST_WAIT_REPORT_S
};

// Reads both from the environment (whole seconds >= 1); a malformed value is util::ConfigError
// naming the variable.
WaitTiming wait_timing_from_environment();

// "rank 3", "ranks 2-3", "ranks 0, 2, 4-6" (input ascending).
std::string rank_list(const std::vector<int>& ranks);

// Missing ranks by node (node = rank / local_world_size): "node 1 (ranks 2-3)" for a whole node,
// "rank 3 (node 1)" for part of one, joined with ", ".
std::string describe_missing(const std::vector<int>& missing, const RankEnv& env);

// "rendezvous: waiting for node 1 (ranks 2-3) for 10 s; 2 of 4 ranks arrived (timeout 120 s)".
std::string rendezvous_waiting_line(const std::vector<int>& missing, const RankEnv& env, const WaitTiming& timing,
                                    std::chrono::seconds waited);

// The end of a rendezvous that timed out with `missing` ranks absent; the hint is the command
// that starts the first missing node (lrhost's launcher) or the variables its ranks need (torchrun).
util::Error rendezvous_timeout_error(const std::vector<int>& missing, const RankEnv& env, const WaitTiming& timing);

// "rendezvous: waiting for the store of node 0 at HOST:PORT for 10 s (timeout 120 s)".
std::string store_waiting_line(const RankEnv& env, const WaitTiming& timing, std::chrono::seconds waited);

// This rank could not reach the store (hosted by node 0's launcher, or rank 0 under torchrun)
// within the rendezvous timeout. `cause` is the socket error in one line.
util::Error store_unreachable_error(const RankEnv& env, const WaitTiming& timing, const std::string& cause);

// A peer's place in a group's sequence of collectives, as last published to the store.
struct PeerProgress {
  int rank = 0;                         // the job's rank number
  std::optional<std::int64_t> started;  // collectives it had started; nullopt: it never published
};

// After collective number `number` (1-based, within its group) timed out: which peers never
// reached it. "rank 1 never reached it (rank 1 is at collective #1 of this group, this is #2)";
// "ranks 1, 3 never reached it (...)"; when every peer got there, that one may be stuck inside it.
std::string laggards_text(std::int64_t number, const std::vector<PeerProgress>& peers);

}  // namespace lrhost::dist
