// Names for signals and wait statuses in the words a user searches for: "SIGKILL", "signal 9
// (SIGKILL: Killed)", "exit code 1". The launcher's failure report and its exit code (the failing
// rank's code, or 128 + signal as shells do) are built from these.
#pragma once
#include <string>

namespace lrhost::launch {

// "SIGKILL"; "signal 77" for numbers without a name.
std::string signal_name(int signal);

// "signal 9 (SIGKILL: Killed)".
std::string describe_signal(int signal);

// A waitpid() status as text: "exit code 3", "exited normally", "signal 9 (SIGKILL: Killed)".
std::string describe_wait_status(int status);

// The exit code a shell would report for the status: the exit code, or 128 + signal.
int shell_exit_code(int status);

// True when the status is a clean exit(0).
bool succeeded(int status);

}  // namespace lrhost::launch
