// Attempts and restarts. Each attempt gets a fresh store on a single node (a restarted group must
// not read the previous attempt's rendezvous keys); with several nodes the store is re-created on
// the agreed port. Stale error files are removed before an attempt so a report never shows an
// earlier attempt's error.
#include "host/launch/launcher.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "host/launch/error_file.hpp"
#include "host/launch/failure_report.hpp"
#include "host/launch/interrupted_checkpoints.hpp"
#include "host/launch/interrupts.hpp"
#include "host/launch/rank_environment.hpp"
#include "host/launch/resume_hint.hpp"
#include "host/launch/root_cause.hpp"
#include "host/launch/run_dir.hpp"
#include "host/launch/run_lock.hpp"
#include "host/launch/signals.hpp"
#include "host/launch/spawn.hpp"
#include "host/launch/store_server.hpp"
#include "host/launch/supervisor.hpp"
#include "host/launch/unused_run_dir.hpp"
#include "host/util/error.hpp"
#include "host/util/log.hpp"
#include "host/util/save_on_signal.hpp"

namespace lrhost::launch {
namespace {

// torchrun's rule, less blunt: ranks share the cores instead of each starting one OpenMP thread
// per core, unless the user chose OMP_NUM_THREADS.
std::optional<int> omp_threads_per_rank(int nproc) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr || nproc <= 1) return std::nullopt;
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / nproc);
}

void remove_stale_error_files(const LaunchOptions& options) {
  for (int local = 0; local < options.nproc; ++local) {
    std::error_code ec;
    std::filesystem::remove(error_file_path(options.run_dir, options.node_rank * options.nproc + local), ec);
  }
}

std::vector<RankProcess> start_ranks(const LaunchOptions& options, int master_port, int restart_count,
                                     const std::optional<int>& omp_threads) {
  std::vector<std::string> argv{"lrhost"};
  argv.insert(argv.end(), options.rank_arguments.begin(), options.rank_arguments.end());
  auto inherited = current_environment();
  std::vector<RankProcess> ranks;
  for (int local = 0; local < options.nproc; ++local) {
    RankSpec spec;
    auto& p = spec.placement;
    p.rank = options.node_rank * options.nproc + local;
    p.local_rank = local;
    p.world_size = options.world_size();
    p.local_world_size = options.nproc;
    p.node_rank = options.node_rank;
    p.master_addr = options.nnodes == 1 ? "127.0.0.1" : options.master_addr;
    p.master_port = master_port;
    p.store_hosted = true;
    p.device = options.device;
    p.timeout = std::chrono::seconds(options.timeout_s);
    spec.run_dir = options.run_dir;
    spec.rendezvous_timeout = std::chrono::seconds(options.rendezvous_timeout_s);
    spec.restart_count = restart_count;
    spec.launcher_pid = static_cast<long>(getpid());
    spec.overwrite = options.overwrite;
    spec.omp_threads = omp_threads;
    try {
      pid_t pid = spawn_self(argv, rank_environment(inherited, spec));
      ranks.push_back({.rank = p.rank, .local_rank = local, .pid = pid});
      spdlog::debug("started rank {} (pid {})", p.rank, pid);
    } catch (...) {
      stop_ranks(ranks, SIGTERM, StopTiming{}, std::chrono::steady_clock::now());
      throw;
    }
  }
  return ranks;
}

// What the launcher says and returns after a failed attempt.
struct FailureSummary {
  int rank = 0;         // the root cause
  std::string message;  // its error, or how it exited
  int exit_code = 1;    // the launcher's exit code if no restart follows
};

// Every rank's error file of this attempt: this node's (stale ones were removed before the attempt)
// and, with a run directory shared between nodes, other nodes' ones written since this attempt
// began (an older one is left over from an earlier attempt or job).
std::vector<ErrorRecord> read_error_records(const LaunchOptions& options, const AttemptOutcome& outcome,
                                            std::int64_t attempt_start_us, std::map<int, std::string>& problems) {
  std::vector<ErrorRecord> records;
  for (int rank = 0; rank < options.world_size(); ++rank) {
    bool local = std::any_of(outcome.ranks.begin(), outcome.ranks.end(),
                             [&](const RankProcess& process) { return process.rank == rank; });
    try {
      auto record = read_error_file(error_file_path(options.run_dir, rank));
      if (!record || (!local && record->time_us < attempt_start_us)) continue;
      record->rank = rank;  // the file's place decides, in case a rank wrote a wrong RANK
      records.push_back(std::move(*record));
    } catch (const std::exception& e) {
      if (local) problems[rank] = util::describe(e);
    }
  }
  return records;
}

FailureSummary report_failure(const AttemptOutcome& outcome, const LaunchOptions& options, int restart_count,
                              std::int64_t attempt_start_us) {
  std::map<int, std::string> problems;
  auto cause = choose_root_cause(outcome, read_error_records(options, outcome, attempt_start_us, problems));
  ReportContext context{host_name(), options.run_dir, restart_count, options.max_restarts};
  std::string report = failure_report(outcome, context, cause, problems);
  std::fputs(report.c_str(), stderr);
  std::fflush(stderr);
  std::ofstream(options.run_dir / "errors" / "report.txt", std::ios::app) << report << '\n';

  FailureSummary summary;
  summary.rank = cause.rank;
  const RankProcess* process = cause.process ? &outcome.ranks[*cause.process] : nullptr;
  const RankProcess& first = outcome.ranks.at(*outcome.first_failure);
  // The cause's own exit code when it exited by itself; when the launcher stopped it (it recorded
  // its error, but a consequence elsewhere was reaped first) or it ran on another node, the code
  // of the first rank that failed here.
  bool own_exit = process && process->status && !process->stop_signal;
  summary.exit_code = shell_exit_code(own_exit ? *process->status : *first.status);
  summary.message = cause.error                  ? cause.error->message
                    : process && process->status ? describe_wait_status(*process->status)
                                                 : describe_wait_status(*first.status);
  return summary;
}

// The launcher's last words after a preemption. The ranks logged the step and the checkpoint; this
// names the command that continues the run, which the checkpoint binding recorded after the save.
std::string preemption_report(const AttemptOutcome& outcome, const std::optional<std::string>& resume_command) {
  std::string text = "lrhost: preempted" +
                     (outcome.preempted_by != 0 ? " by " + signal_name(outcome.preempted_by) : std::string()) +
                     ": every rank stopped after the same step";
  if (resume_command)
    text += " and saved a checkpoint there; continue with:\n  " + *resume_command +
            "\n(or rerun the same command with resume=auto)\n";
  else
    text += "; no checkpoint was saved (the recipe saves none), so there is nothing to continue from\n";
  text += "lrhost: exit code " + std::to_string(util::kPreemptedExitCode) + " (preempted)\n";
  return text;
}

}  // namespace

int launch(const LaunchOptions& options) {
  check_launch_options(options);
  create_run_dir(options.run_dir);
  // Held until the job ends (the ranks inherit it), and taken before the logs are opened: a second
  // job on this folder fails here without touching it.
  RunDirLock run_dir_lock = RunDirLock::acquire(options.run_dir, lock_name_for_node(options.node_rank));
  std::string tag = options.nnodes == 1 ? "launcher" : "launcher_node" + std::to_string(options.node_rank);
  util::setup_logging(
      {.rank = 0, .verbose = options.verbose, .log_dir = log_dir(options.run_dir).string(), .tag = tag});
  InterruptGuard interrupts(options.save_signals);
  unsigned hardware_threads = std::thread::hardware_concurrency();
  if (auto warning = oversubscription_warning(options.nproc, options.device, hardware_threads)) spdlog::warn(*warning);
  auto omp_threads = omp_threads_per_rank(options.nproc);
  if (omp_threads) spdlog::info("OMP_NUM_THREADS is not set: each rank gets {} thread(s)", *omp_threads);
  const std::string store_host = options.nnodes == 1 ? "127.0.0.1" : options.master_addr;

  for (int restart = 0;; ++restart) {
    remove_stale_error_files(options);
    std::optional<StoreServer> store;
    int port = options.master_port;
    if (options.node_rank == 0) {
      store.emplace(store_host, options.master_port, std::chrono::seconds(options.timeout_s));
      port = store->port();
    }
    spdlog::info(
        "starting {} {} rank(s) on {} (world size {}), store {}:{}, run dir {}{}", options.nproc, options.device,
        host_name(), options.world_size(), store_host, port, options.run_dir.string(),
        restart > 0 ? ", restart " + std::to_string(restart) + " of " + std::to_string(options.max_restarts) : "");
    auto attempt_start_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    auto outcome = supervise(start_ranks(options, port, restart, omp_threads), StopTiming{}, options.save_signals);
    ReportContext context{host_name(), options.run_dir, restart, options.max_restarts};

    if (outcome.interrupted_by != 0) {
      context.resume_command = recorded_resume_command(options.run_dir);
      context.checkpoint_lines = interrupted_checkpoint_lines(options.run_dir, outcome.save_aborted);
      std::fputs(interrupt_report(outcome, context).c_str(), stderr);
      return 128 + outcome.interrupted_by;
    }
    if (outcome.preempted) {
      // Not a failure: no restart (the scheduler wants the node back), and a code of its own for
      // the requeue logic (save_on_signal.hpp).
      std::fputs(preemption_report(outcome, recorded_resume_command(options.run_dir)).c_str(), stderr);
      return util::kPreemptedExitCode;
    }
    if (outcome.succeeded()) {
      spdlog::info("all {} rank(s) finished", options.nproc);
      return 0;
    }
    auto failure = report_failure(outcome, options, restart, attempt_start_us);
    if (restart >= options.max_restarts) {
      spdlog::error("rank {} failed ({}){}", failure.rank, failure.message,
                    options.max_restarts > 0
                        ? "; no restarts left (--max-restarts " + std::to_string(options.max_restarts) + ")"
                        : "");
      // No rank started its run (a typo in an override, a recipe that does not parse): the folder
      // this launcher claimed holds only the record of the error just reported.
      if (options.claimed_run_dir && holds_only_bookkeeping(options.run_dir)) {
        spdlog::shutdown();  // the log files are about to go
        remove_unused_run_dir(options.run_dir);
      }
      return failure.exit_code;
    }
    spdlog::warn("restarting the group: restart {} of {} (--max-restarts) after rank {} failed: {}", restart + 1,
                 options.max_restarts, failure.rank, failure.message);
  }
}

}  // namespace lrhost::launch
