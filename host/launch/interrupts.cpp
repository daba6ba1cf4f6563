// Async-signal-safe recording of SIGINT/SIGTERM: the handler writes two sig_atomic_t and nothing
// else, because almost nothing is safe inside a handler.
#include "host/launch/interrupts.hpp"

#include <csignal>

namespace lrhost::launch {
namespace {

volatile std::sig_atomic_t first_signal = 0;
volatile std::sig_atomic_t signal_count = 0;
struct sigaction previous_int {};
struct sigaction previous_term {};

void record_signal(int signal) {
  if (first_signal == 0) first_signal = signal;
  signal_count = signal_count + 1;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  first_signal = 0;
  signal_count = 0;
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: let the watch loop's sleep wake early
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

int pending_interrupt() {
  return first_signal;
}

int interrupt_count() {
  return signal_count;
}

}  // namespace lrhost::launch
