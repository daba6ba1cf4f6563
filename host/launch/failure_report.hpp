// The one root-cause report the launcher prints when a job fails: the rank whose failure caused it
// (root_cause.hpp), on which host, how (exit code or signal), its error message and Lua traceback
// from its error file; then the other ranks' recorded errors, one line each (mostly consequences:
// collectives that failed because that rank went away); then one line per rank of this node saying
// what became of it. Pure text formatting, so it is unit-tested.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "host/launch/error_file.hpp"
#include "host/launch/root_cause.hpp"
#include "host/launch/supervisor.hpp"

namespace lrhost::launch {

struct ReportContext {
  std::string host;  // this node's host name
  std::filesystem::path run_dir;
  int restart_count = 0;  // which attempt failed (0: the first)
  int max_restarts = 0;
  std::optional<std::string> resume_command;  // what continues the run (resume_hint.hpp), when known
  std::string checkpoint_lines;  // the newest complete checkpoint, what was not saved (interrupted_checkpoints.hpp)
};

// "exit code 0 (finished)", "stopped by the launcher with SIGTERM", "killed with SIGKILL after
// the grace period", "exit code 1 (failed)", ... for one rank that is not the root cause.
std::string rank_fate(const RankProcess& rank);

// `problems` explains, per rank, an error file that exists but could not be read.
std::string failure_report(const AttemptOutcome& outcome, const ReportContext& context, const RootCause& cause,
                           const std::map<int, std::string>& problems = {});

// The shorter report of a launcher that was itself interrupted (SIGINT/SIGTERM), ending with the
// command that continues the run when one is known.
std::string interrupt_report(const AttemptOutcome& outcome, const ReportContext& context);

}  // namespace lrhost::launch
