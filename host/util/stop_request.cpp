// The recording handler. It may only touch sig_atomic_t / lock-free atomics and call
// async-signal-safe functions (clock_gettime, signal, raise), hence the plain globals.
#include "host/util/stop_request.hpp"

#include <atomic>
#include <csignal>
#include <ctime>

namespace lrhost::util {
namespace {

volatile std::sig_atomic_t first_signal = 0;
std::atomic<long long> first_signal_ms{0};
std::atomic<bool> armed{false};

long long monotonic_ms() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

void record(int signal) {
  if (first_signal == 0) {
    first_signal_ms.store(monotonic_ms());
    first_signal = signal;
    return;
  }
  if (monotonic_ms() - first_signal_ms.load() < kRepeatWindowMs) return;  // the same request, delivered twice
  // A second request: stop now, without finishing the step or the save.
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

void arm_stop_request(const std::vector<int>& signals) {
  if (armed.exchange(true)) return;
  static_assert(std::atomic<long long>::is_always_lock_free, "the handler needs a lock-free atomic");
  struct sigaction action {};
  action.sa_handler = record;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a recorded request must not make a system call in a save fail
  for (int signal : signals) sigaction(signal, &action, nullptr);
}

int requested_stop_signal() {
  return first_signal;
}

}  // namespace lrhost::util
