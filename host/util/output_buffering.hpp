// Every lrhost process writes stdout line by line, also when it is a pipe or a file (a launcher's
// ranks share the launcher's stdout, a job's output is usually a file), so that what a recipe printed
// reaches the output the moment the line is complete, whatever ends the process afterwards.
//
// Why line buffering rather than flushing when a signal comes: C stdio fully buffers a pipe or file
// (4 KiB and more), and a rank that the launcher stops with SIGTERM after another rank failed, or
// kills with SIGKILL after the grace period, dies of the signal's default action with that buffer
// unwritten: its own last lines (often the ones that say what it saw) were lost. fflush() may not be
// called from a signal handler (it is not async-signal-safe: the signal may arrive while the same
// FILE is locked mid-write), and a handler that only sets a flag for the normal path to flush does
// nothing for a default-action death or SIGKILL, which never return to that path. With line buffering
// nothing complete is ever pending. The cost is one write(2) per line, nothing next to a training
// step. Lua's print and C++'s std::cout (synchronised with stdio) go through the same stdout; stderr
// stays unbuffered (set again here), and spdlog's sinks flush every message at info and above (util/log.cpp).
#pragma once

namespace lrhost::util {

// Makes stdout line-buffered (a terminal already is). Call before anything is written.
void line_buffer_stdout();

}  // namespace lrhost::util
