// Rank-aware logging through spdlog. Every line carries the rank; the main rank prints info and
// above on the console, other ranks only warnings and errors; with a log folder every rank also
// writes its full log to <folder>/rank<N>.log.
#pragma once
#include <optional>
#include <string>

namespace lrhost::util {

struct LogOptions {
  int rank = 0;
  bool verbose = false;                  // debug level on the console
  std::optional<std::string> log_dir;   // full per-rank log file when set
};

void setup_logging(const LogOptions& options);

}  // namespace lrhost::util
