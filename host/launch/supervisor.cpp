// The watch loop. waitpid(WNOHANG) per rank instead of a blocking wait: the loop must also notice
// interrupts and keep its deadlines, and it only ever reaps its own ranks (never waitpid(-1), which
// would steal the exit status of anything else this process started).
#include "host/launch/supervisor.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <thread>

#include "host/launch/interrupts.hpp"
#include "host/launch/signals.hpp"
#include "host/launch/spawn.hpp"
#include "host/util/save_on_signal.hpp"

namespace lrhost::launch {
namespace {

using Clock = std::chrono::steady_clock;

// Reaps whatever exited; returns the index of the first new failure, if any.
std::optional<std::size_t> reap(std::vector<RankProcess>& ranks, Clock::time_point start) {
  std::optional<std::size_t> failure;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    auto& rank = ranks[i];
    if (rank.status) continue;
    int status = 0;
    pid_t done = waitpid(rank.pid, &status, WNOHANG);
    if (done == 0) continue;
    if (done < 0) status = 1 << 8;  // lost (ECHILD): count it as exit code 1 rather than wait forever
    rank.status = status;
    rank.runtime = Clock::now() - start;
    if (!succeeded(status) && !failure) failure = i;
  }
  return failure;
}

bool all_exited(const std::vector<RankProcess>& ranks) {
  for (const auto& rank : ranks)
    if (!rank.status) return false;
  return true;
}

void send(std::vector<RankProcess>& ranks, int signal) {
  for (auto& rank : ranks)
    if (!rank.status) {
      signal_rank(rank.pid, signal);
      rank.stop_signal = signal;
    }
}

// Polls until every rank exited or the deadline passed; a new interrupt ends the wait early.
void wait_until(std::vector<RankProcess>& ranks, Clock::time_point deadline, Clock::time_point start,
                const StopTiming& timing, int interrupts_seen) {
  auto step = std::min<std::chrono::milliseconds>(timing.poll, std::chrono::milliseconds(20));
  while (true) {
    reap(ranks, start);
    if (all_exited(ranks) || Clock::now() >= deadline || interrupt_count() > interrupts_seen) return;
    std::this_thread::sleep_for(step);
  }
}

bool exited_preempted(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == util::kPreemptedExitCode;
}

// After a save signal was forwarded (`signal` > 0), or once a rank exited with util::kPreemptedExitCode
// because it was signalled directly (`signal` 0): waits for every rank to exit by itself (0: it
// had finished anyway; util::kPreemptedExitCode: it saved and stopped). A rank that died of the signal itself (its
// recipe never asks acc:stop_requested, so the default action ended it) makes this an interrupt as
// before; any other exit a failure; a new signal to the launcher an abort.
void wait_for_preemption(std::vector<RankProcess>& ranks, int signal, const StopTiming& timing, Clock::time_point start,
                         AttemptOutcome& outcome) {
  int interrupts_seen = interrupt_count();
  if (signal != 0) send(ranks, signal);
  while (!all_exited(ranks)) {
    std::this_thread::sleep_for(timing.poll);
    reap(ranks, start);
    if (interrupt_count() > interrupts_seen) {
      outcome.interrupted_by = latest_interrupt();
      outcome.save_aborted = true;
      stop_ranks(ranks, outcome.interrupted_by, timing, start);
      return;
    }
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (!ranks[i].status || succeeded(*ranks[i].status) || exited_preempted(*ranks[i].status)) continue;
      if (signal != 0 && WIFSIGNALED(*ranks[i].status) && WTERMSIG(*ranks[i].status) == signal) {
        outcome.interrupted_by = signal;
      } else {
        outcome.first_failure = i;
      }
      // Armed ranks take a repeat within util/stop_request.hpp's window for the same request, so the
      // grace period's SIGKILL is what stops them; only a broken group lands here.
      stop_ranks(ranks, SIGTERM, timing, start);
      return;
    }
  }
  if (std::any_of(ranks.begin(), ranks.end(), [](const RankProcess& rank) { return exited_preempted(*rank.status); })) {
    outcome.preempted = true;
    outcome.preempted_by = signal;
  }
}

}  // namespace

void stop_ranks(std::vector<RankProcess>& ranks, int first_signal, const StopTiming& timing,
                Clock::time_point attempt_start) {
  int interrupts_seen = interrupt_count();
  send(ranks, first_signal);
  wait_until(ranks, Clock::now() + timing.grace, attempt_start, timing, interrupts_seen);
  if (all_exited(ranks)) return;
  send(ranks, SIGKILL);
  wait_until(ranks, Clock::now() + timing.kill_wait, attempt_start, timing, interrupt_count());
}

AttemptOutcome supervise(std::vector<RankProcess> ranks, const StopTiming& timing,
                         const std::vector<int>& save_signals) {
  AttemptOutcome outcome;
  auto start = Clock::now();
  while (true) {
    // Interrupts first: a Ctrl-C that also hit a rank must be reported as an interrupt, not as
    // that rank's failure.
    if (int signal = pending_interrupt()) {
      if (std::find(save_signals.begin(), save_signals.end(), signal) != save_signals.end()) {
        wait_for_preemption(ranks, signal, timing, start, outcome);
        break;
      }
      outcome.interrupted_by = signal;
      stop_ranks(ranks, signal, timing, start);
      break;
    }
    if (auto failure = reap(ranks, start)) {
      if (exited_preempted(*ranks[*failure].status)) {
        wait_for_preemption(ranks, 0, timing, start, outcome);
        break;
      }
      outcome.first_failure = failure;
      stop_ranks(ranks, SIGTERM, timing, start);
      break;
    }
    if (all_exited(ranks)) break;
    std::this_thread::sleep_for(timing.poll);
  }
  outcome.all_reaped = all_exited(ranks);
  outcome.ranks = std::move(ranks);
  return outcome;
}

}  // namespace lrhost::launch
