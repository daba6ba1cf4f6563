// Watching one attempt of a job: the launcher's ranks on this node, polled every 50 ms. The first
// rank that exits non-zero or dies by a signal stops the whole group: SIGTERM to the others, SIGKILL
// after a grace period, everything reaped within a bounded time. A SIGINT/SIGTERM received by the
// launcher is forwarded to every rank and stops the group the same way, except a --save-on-signal
// signal: that one is forwarded and the launcher waits, with no deadline (the scheduler that sent
// it has its own), for the ranks to save and exit with kPreemptedExitCode. A second signal during
// that wait is forwarded too (the ranks die of it at once, save or not) and stops the group as an
// interrupt does.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <vector>

namespace lrhost::launch {

struct RankProcess {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  std::optional<int> status;                // waitpid status once reaped
  std::optional<int> stop_signal;           // the last signal the launcher sent it
  std::chrono::duration<double> runtime{};  // from the start of the attempt to its exit
};

struct StopTiming {
  std::chrono::milliseconds poll{50};
  std::chrono::milliseconds grace{5000};      // after SIGTERM, before SIGKILL
  std::chrono::milliseconds kill_wait{4000};  // after SIGKILL, before giving up on reaping
};

struct AttemptOutcome {
  std::vector<RankProcess> ranks;
  std::optional<std::size_t> first_failure;  // index into ranks
  int interrupted_by = 0;                    // signal the launcher received, or 0
  bool save_aborted = false;                 // it came while the ranks were stopping to save (save-on-signal)
  // Every rank saved and exited with kPreemptedExitCode, after `preempted_by` reached the launcher
  // (0: the ranks were signalled directly, e.g. by Slurm or a container runtime).
  bool preempted = false;
  int preempted_by = 0;
  bool all_reaped = true;

  bool succeeded() const { return !first_failure && interrupted_by == 0 && !preempted && all_reaped; }
};

// Watches `ranks` (already started) until all exited cleanly, one failed, or the launcher was
// interrupted; in the last two cases stops and reaps the rest before returning.
// `save_signals`: the --save-on-signal list.
AttemptOutcome supervise(std::vector<RankProcess> ranks, const StopTiming& timing = {},
                         const std::vector<int>& save_signals = {});

// Stops every unreaped rank: `first_signal`, then SIGKILL after the grace period. Exposed for the
// launcher's own error paths (a rank that could not be started).
void stop_ranks(std::vector<RankProcess>& ranks, int first_signal, const StopTiming& timing,
                std::chrono::steady_clock::time_point attempt_start);

}  // namespace lrhost::launch
