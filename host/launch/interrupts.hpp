// SIGINT and SIGTERM sent to the launcher. The handlers only record the signal; the launcher's
// watch loop sees it within one poll and forwards it to every rank, then stops them as it would
// after a failure. Installed for the launcher's lifetime and restored afterwards.
#pragma once

namespace lrhost::launch {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the recording handlers
  ~InterruptGuard();  // restores the previous ones
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// The first interrupting signal received since installation, or 0.
int pending_interrupt();

// How many interrupting signals arrived (a second Ctrl-C escalates to SIGKILL).
int interrupt_count();

}  // namespace lrhost::launch
