// Starting rank processes. Each rank is a fresh exec of this very binary (/proc/self/exe) through
// posix_spawn, never a fork that keeps running: the launcher holds threads (the store server) and
// possibly a CUDA driver handle, neither of which survives a fork. Each rank leads its own process
// group so that stopping it also stops whatever it started (data loader workers, tools).
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace lrhost::launch {

// Starts /proc/self/exe with `argv` (argv[0] included) and exactly `env`. Throws util::IoError
// when the process cannot be started.
pid_t spawn_self(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// Sends `signal` to the process group led by `pid`, or to the process alone if it has none.
void signal_rank(pid_t pid, int signal);

}  // namespace lrhost::launch
