// A launched rank must not outlive its launcher: if the launcher is killed (SIGKILL, OOM killer, a
// test runner's timeout) there is nobody left to stop the ranks, and a rank blocked in a collective
// would wait forever. The kernel's parent-death signal covers that case.
#pragma once

namespace lrhost::launch {

// When $LRHOST_LAUNCHER_PID is set: arranges SIGKILL for this process when its parent dies, and
// exits at once if the launcher is already gone. Does nothing for in-process or torchrun ranks.
void follow_launcher();

}  // namespace lrhost::launch
