// PR_SET_PDEATHSIG plus the race check the man page asks for: the parent may have died between
// the spawn and the prctl, in which case this process was re-parented and must leave.
#include "host/launch/parent_watch.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace lrhost::launch {

void follow_launcher() {
  const char* launcher = std::getenv("LRHOST_LAUNCHER_PID");
  if (launcher == nullptr || *launcher == '\0') return;
  long pid = std::strtol(launcher, nullptr, 10);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (static_cast<long>(getppid()) != pid) {
    std::fprintf(stderr, "lrhost: error: the launcher (pid %ld) is gone; this rank stops\n", pid);
    std::_Exit(1);
  }
}

}  // namespace lrhost::launch
