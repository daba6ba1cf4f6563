// The one root-cause report the launcher prints when a job fails: which rank failed first, on which
// host, how (exit code or signal), its error message and Lua traceback from its error file, then
// one line per other rank saying what became of it. Pure text formatting, so it is unit-tested.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "host/launch/error_file.hpp"
#include "host/launch/supervisor.hpp"

namespace lrhost::launch {

struct ReportContext {
  std::string host;  // this node's host name
  std::filesystem::path run_dir;
  int restart_count = 0;  // which attempt failed (0: the first)
  int max_restarts = 0;
};

// "exit code 0 (finished)", "stopped by the launcher with SIGTERM", "killed with SIGKILL after
// the grace period", "exit code 1 (failed)", ... for one rank that is not the root cause.
std::string rank_fate(const RankProcess& rank);

// `error` is the failing rank's error file (nullopt: none was written); `error_problem` explains an
// error file that exists but could not be read.
std::string failure_report(const AttemptOutcome& outcome, const ReportContext& context,
                           const std::optional<ErrorRecord>& error, const std::string& error_problem = {});

// The shorter report of a launcher that was itself interrupted (SIGINT/SIGTERM).
std::string interrupt_report(const AttemptOutcome& outcome, const ReportContext& context);

}  // namespace lrhost::launch
