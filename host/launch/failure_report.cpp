// Formatting of failure and interrupt reports. Every line starts with "lrhost: " so the report
// stays recognisable when the ranks' own output is interleaved around it.
#include "host/launch/failure_report.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <sstream>

#include "host/launch/root_cause.hpp"
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

std::string failure_report(const AttemptOutcome& outcome, const ReportContext& context, const RootCause& cause,
                           const std::map<int, std::string>& problems) {
  std::ostringstream out;
  const auto& error = cause.error;
  const RankProcess* failed = cause.process ? &outcome.ranks.at(*cause.process) : nullptr;
  out << "lrhost: ======== job failed: rank " << cause.rank << " failed first ========\n";
  if (failed)
    out << "lrhost:   rank:  " << cause.rank << " (local rank " << failed->local_rank << ", pid " << failed->pid
        << ")\n";
  else
    out << "lrhost:   rank:  " << cause.rank << " (on another node"
        << (error ? ", pid " + std::to_string(error->pid) : std::string()) << ")\n";
  out << "lrhost:   host:  " << (error && !error->host.empty() ? error->host : context.host) << '\n';
  if (!failed)
    out << "lrhost:   exit:  not a rank of this node: see its node's launcher\n";
  else if (failed->status)
    out << "lrhost:   exit:  " << (failed->stop_signal ? rank_fate(*failed) : describe_wait_status(*failed->status))
        << (failed->stop_signal ? "" : " after " + seconds(failed->runtime)) << '\n';
  else
    out << "lrhost:   exit:  " << rank_fate(*failed) << '\n';
  if (context.max_restarts > 0)
    out << "lrhost:   attempt: " << context.restart_count + 1 << " of " << context.max_restarts + 1 << " (restart "
        << context.restart_count << ")\n";
  auto file = error_file_path(context.run_dir, cause.rank);
  auto problem = problems.find(cause.rank);
  if (error) {
    out << "lrhost:   error: " << error->message << '\n';
    // The first line of the full text is the message just printed; the rest is the traceback.
    auto rest = error->traceback.find('\n');
    if (rest != std::string::npos && rest + 1 < error->traceback.size())
      indented(out, error->traceback.substr(rest + 1), "  ");
    if (!error->time.empty()) out << "lrhost:   time:  " << error->time << '\n';
  } else if (problem != problems.end()) {
    out << "lrhost:   error: " << problem->second << '\n';
  } else {
    out << "lrhost:   error: no error file (" << file.string() << "): the process was killed before it could write one";
    if (failed && failed->status && WIFSIGNALED(*failed->status))
      out << " (" << signal_name(WTERMSIG(*failed->status)) << ")";
    out << '\n';
  }
  if (!cause.certain)
    out << "lrhost:   note:  no rank recorded an error of its own (only failures caused by other ranks); this is "
           "the earliest\n";
  bool other_problems = problems.size() > (problem != problems.end() ? 1u : 0u);
  if (!cause.others.empty() || other_problems)
    out << "lrhost:   errors recorded by other ranks (later, or caused by this failure):\n";
  for (const auto& other : cause.others)
    out << "lrhost:     rank " << other.rank << (other.consequence ? " (consequence)" : " (own error)") << ": "
        << other.message << '\n';
  for (const auto& [rank, text] : problems)
    if (rank != cause.rank) out << "lrhost:     rank " << rank << ": unreadable error file: " << text << '\n';
  std::optional<std::size_t> skip = cause.process;
  other_ranks(out, outcome, skip, "other ranks");
  out << "lrhost:   logs:  " << log_dir(context.run_dir).string() << "/rank<R>.log\n";
  return out.str();
}

std::string interrupt_report(const AttemptOutcome& outcome, const ReportContext& context) {
  std::ostringstream out;
  out << "lrhost: ======== interrupted by " << signal_name(outcome.interrupted_by)
      << ": forwarded to every rank ========\n";
  other_ranks(out, outcome, std::nullopt, "ranks");
  out << "lrhost:   logs:  " << log_dir(context.run_dir).string() << "/rank<R>.log\n";
  out << context.checkpoint_lines;
  if (context.resume_command)
    out << "lrhost:   continue this run from its newest checkpoint with:\n  " << *context.resume_command << '\n';
  return out.str();
}

}  // namespace lrhost::launch
