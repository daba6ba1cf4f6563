// Async-signal-safe recording of SIGINT/SIGTERM and the save signals: the handler writes three
// sig_atomic_t and nothing else, because almost nothing is safe inside a handler.
#include "host/launch/interrupts.hpp"

#include <csignal>

namespace lrhost::launch {
namespace {

volatile std::sig_atomic_t first_signal = 0;
volatile std::sig_atomic_t latest_signal = 0;
volatile std::sig_atomic_t signal_count = 0;
// Previous handlers, by signal number (NSIG bounds every number sigaction accepts).
struct sigaction previous[NSIG] {};
bool installed[NSIG] = {};

void record_signal(int signal) {
  if (first_signal == 0) first_signal = signal;
  latest_signal = signal;
  signal_count = signal_count + 1;
}

}  // namespace

InterruptGuard::InterruptGuard(const std::vector<int>& save_signals) {
  first_signal = 0;
  latest_signal = 0;
  signal_count = 0;
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: let the watch loop's sleep wake early
  std::vector<int> signals{SIGINT, SIGTERM};
  signals.insert(signals.end(), save_signals.begin(), save_signals.end());
  for (int signal : signals)
    if (signal > 0 && signal < NSIG && !installed[signal])
      installed[signal] = sigaction(signal, &action, &previous[signal]) == 0;
}

InterruptGuard::~InterruptGuard() {
  for (int signal = 1; signal < NSIG; ++signal)
    if (installed[signal]) {
      sigaction(signal, &previous[signal], nullptr);
      installed[signal] = false;
    }
}

int pending_interrupt() {
  return first_signal;
}

int latest_interrupt() {
  return latest_signal;
}

int interrupt_count() {
  return signal_count;
}

}  // namespace lrhost::launch
