// Rank-aware logging through spdlog. Every line carries the rank; the main rank prints info and
// above on the console, other ranks only warnings and errors; with a log folder every rank also
// writes its full log to <folder>/rank<N>.log. The launcher logs under its own tag instead. Log
// files are appended to, after an attempt header (log_file.hpp), never truncated.
#pragma once
#include <optional>
#include <string>

namespace lrhost::util {

struct LogOptions {
  int rank = 0;
  bool verbose = false;                // debug level on the console
  std::optional<std::string> log_dir;  // full per-rank log file when set
  std::string tag;                     // replaces "rank<N>" in lines and the file name ("launcher")
  std::optional<int> restart_count;    // shown in the log file's attempt header when known
};

void setup_logging(const LogOptions& options);

// This process's rank from $RANK (set by the launcher, torchrun or Slurm wrappers); 0 when unset
// or not a number (the distributed setup reports malformed values).
int rank_from_environment();

}  // namespace lrhost::util
