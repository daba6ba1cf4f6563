// SIGINT and SIGTERM sent to the launcher, and the --save-on-signal signals. The handlers only
// record the signal; the launcher's watch loop sees it within one poll and forwards it to every
// rank. A plain interrupt then stops them as after a failure; a save signal lets them save and exit
// (supervisor.hpp). Installed for the launcher's lifetime and restored afterwards.
#pragma once
#include <vector>

namespace lrhost::launch {

class InterruptGuard {
 public:
  // Installs the recording handlers on SIGINT, SIGTERM and `save_signals`.
  explicit InterruptGuard(const std::vector<int>& save_signals = {});
  ~InterruptGuard();  // restores the previous ones
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// The first interrupting signal received since installation, or 0.
int pending_interrupt();

// The most recent one, or 0 (a second signal during a preemption save aborts it).
int latest_interrupt();

// How many interrupting signals arrived (a second Ctrl-C escalates to SIGKILL).
int interrupt_count();

}  // namespace lrhost::launch
