// Formatting of failure and interrupt reports. Every line starts with "lrhost: " so the report
// stays recognisable when the ranks' own output is interleaved around it.
#include "host/launch/failure_report.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <sstream>

#include "host/launch/run_dir.hpp"
#include "host/launch/signals.hpp"

namespace lrhost::launch {
namespace {

std::string seconds(std::chrono::duration<double> time) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", time.count());
  return text;
}

void indented(std::ostringstream& out, const std::string& text, const std::string& indent) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out << "lrhost: " << indent << line << '\n';
}

void other_ranks(std::ostringstream& out, const AttemptOutcome& outcome, std::optional<std::size_t> skip,
                 const char* title) {
  bool header = false;
  for (std::size_t i = 0; i < outcome.ranks.size(); ++i) {
    if (skip && i == *skip) continue;
    if (!header) out << "lrhost:   " << title << ":\n";
    header = true;
    out << "lrhost:     rank " << outcome.ranks[i].rank << ": " << rank_fate(outcome.ranks[i]) << '\n';
  }
}

}  // namespace

std::string rank_fate(const RankProcess& rank) {
  if (!rank.status) return "still running (pid " + std::to_string(rank.pid) + ") after SIGKILL: could not be reaped";
  int status = *rank.status;
  std::string when = " after " + seconds(rank.runtime);
  if (!rank.stop_signal) {
    if (succeeded(status)) return "finished" + when;
    return "failed too: " + describe_wait_status(status) + when;
  }
  std::string sent = signal_name(*rank.stop_signal);
  if (WIFSIGNALED(status) && WTERMSIG(status) == *rank.stop_signal)
    return *rank.stop_signal == SIGKILL ? "killed with SIGKILL after ignoring SIGTERM for the grace period"
                                        : "stopped by the launcher with " + sent;
  return describe_wait_status(status) + " after the launcher sent " + sent;
}

std::string failure_report(const AttemptOutcome& outcome, const ReportContext& context,
                           const std::optional<ErrorRecord>& error, const std::string& error_problem) {
  std::ostringstream out;
  const auto& failed = outcome.ranks.at(outcome.first_failure.value());
  out << "lrhost: ======== job failed: rank " << failed.rank << " failed first ========\n";
  out << "lrhost:   rank:  " << failed.rank << " (local rank " << failed.local_rank << ", pid " << failed.pid << ")\n";
  out << "lrhost:   host:  " << (error && !error->host.empty() ? error->host : context.host) << '\n';
  out << "lrhost:   exit:  " << describe_wait_status(*failed.status) << " after " << seconds(failed.runtime) << '\n';
  if (context.max_restarts > 0)
    out << "lrhost:   attempt: " << context.restart_count + 1 << " of " << context.max_restarts + 1 << " (restart "
        << context.restart_count << ")\n";
  auto file = error_file_path(context.run_dir, failed.rank);
  if (error) {
    out << "lrhost:   error: " << error->message << '\n';
    // The first line of the full text is the message just printed; the rest is the traceback.
    auto rest = error->traceback.find('\n');
    if (rest != std::string::npos && rest + 1 < error->traceback.size())
      indented(out, error->traceback.substr(rest + 1), "  ");
    if (!error->time.empty()) out << "lrhost:   time:  " << error->time << '\n';
  } else if (!error_problem.empty()) {
    out << "lrhost:   error: " << error_problem << '\n';
  } else {
    out << "lrhost:   error: no error file (" << file.string() << "): the process was killed before it could write one";
    if (WIFSIGNALED(*failed.status)) out << " (" << signal_name(WTERMSIG(*failed.status)) << ")";
    out << '\n';
  }
  other_ranks(out, outcome, outcome.first_failure, "other ranks");
  out << "lrhost:   logs:  " << log_dir(context.run_dir).string() << "/rank<R>.log\n";
  return out.str();
}

std::string interrupt_report(const AttemptOutcome& outcome, const ReportContext& context) {
  std::ostringstream out;
  out << "lrhost: ======== interrupted by " << signal_name(outcome.interrupted_by)
      << ": forwarded to every rank ========\n";
  other_ranks(out, outcome, std::nullopt, "ranks");
  out << "lrhost:   logs:  " << log_dir(context.run_dir).string() << "/rank<R>.log\n";
  return out.str();
}

}  // namespace lrhost::launch
