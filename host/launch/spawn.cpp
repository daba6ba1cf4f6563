// posix_spawn wrapper for rank processes.
#include "host/launch/spawn.hpp"

#include <spawn.h>

#include <csignal>
#include <cstring>

#include "host/util/error.hpp"

namespace lrhost::launch {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& items) {
  std::vector<char*> pointers;
  pointers.reserve(items.size() + 1);
  for (const auto& item : items) pointers.push_back(const_cast<char*>(item.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// Owns the spawn attributes so every exit path destroys them.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    posix_spawnattr_init(&attributes_);
    // Own process group (pgid = pid); signals the launcher ignores or blocks must not stay
    // ignored or blocked in a rank, or a rank could not be stopped with SIGTERM.
    posix_spawnattr_setflags(&attributes_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attributes_, 0);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) sigaddset(&defaults, signal);
    posix_spawnattr_setsigdefault(&attributes_, &defaults);
    sigset_t nothing;
    sigemptyset(&nothing);
    posix_spawnattr_setsigmask(&attributes_, &nothing);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attributes_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  const posix_spawnattr_t* get() const { return &attributes_; }

 private:
  posix_spawnattr_t attributes_;
};

}  // namespace

pid_t spawn_self(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  SpawnAttributes attributes;
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(env);
  pid_t pid = 0;
  int error = posix_spawn(&pid, "/proc/self/exe", nullptr, attributes.get(), c_argv.data(), c_env.data());
  if (error != 0)
    throw util::IoError(std::string("could not start a rank process (posix_spawn of /proc/self/exe): ") +
                        std::strerror(error));
  return pid;
}

void signal_rank(pid_t pid, int signal) {
  if (kill(-pid, signal) != 0) kill(pid, signal);
}

}  // namespace lrhost::launch
