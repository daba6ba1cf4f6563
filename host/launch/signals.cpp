// Signal and wait-status naming. glibc knows the abbreviations (sigabbrev_np) and descriptions
// (strsignal); both are looked up rather than tabulated so real-time and platform signals work.
#include "host/launch/signals.hpp"

#include <sys/wait.h>

#include <csignal>
#include <cstring>

namespace lrhost::launch {

std::string signal_name(int signal) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbreviation = sigabbrev_np(signal)) return std::string("SIG") + abbreviation;
#endif
  return "signal " + std::to_string(signal);
}

std::string describe_signal(int signal) {
  std::string text = "signal " + std::to_string(signal);
  std::string name = signal_name(signal);
  const char* description = strsignal(signal);
  if (name.starts_with("SIG")) {
    text += " (" + name;
    if (description != nullptr) text += std::string(": ") + description;
    text += ")";
  } else if (description != nullptr) {
    text += std::string(" (") + description + ")";
  }
  return text;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status) == 0 ? "exited normally" : "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return describe_signal(WTERMSIG(status)) + (WCOREDUMP(status) ? ", core dumped" : "");
  return "wait status " + std::to_string(status);
}

int shell_exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

bool succeeded(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace lrhost::launch
