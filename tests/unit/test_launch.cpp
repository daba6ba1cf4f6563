// Unit tests of host/launch: signal and wait-status naming, device/flag resolution, rank
// environment construction, run-dir naming, the error-file round trip, the failure report and the
// --save-on-signal list.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "host/dist/rank_env.hpp"
#include "host/dist/wait_report.hpp"
#include "host/launch/error_file.hpp"
#include "host/launch/error_kind.hpp"
#include "host/launch/failure_report.hpp"
#include "host/launch/launch_options.hpp"
#include "host/launch/rank_environment.hpp"
#include "host/launch/resume_hint.hpp"
#include "host/launch/root_cause.hpp"
#include "host/launch/run_dir.hpp"
#include "host/launch/signals.hpp"
#include "host/util/error.hpp"
#include "host/util/save_on_signal.hpp"
#include "test_support.hpp"

using lrhost::test::contains;

using namespace lrhost::launch;
using lrhost::util::ConfigError;
using lrhost::util::format_save_signals;
using lrhost::util::IoError;
using lrhost::util::kDefaultSaveSignals;
using lrhost::util::kSaveOnSignalVariable;
using lrhost::util::parse_save_signals;
using lrhost::util::save_signals_from_environment;

namespace {

// waitpid-style statuses built from real children, so the macros' encoding is not assumed.
int status_of_child(void (*body)()) {
  pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

std::filesystem::path temporary_folder(const std::string& name) {
  auto path = std::filesystem::temp_directory_path() / ("lrhost_test_launch_" + name + "_" + std::to_string(getpid()));
  lrhost::test::remove_tree(path);
  return path;
}

}  // namespace

TEST_CASE("signal names") {
  CHECK(signal_name(SIGKILL) == "SIGKILL");
  CHECK(signal_name(SIGTERM) == "SIGTERM");
  CHECK(describe_signal(SIGKILL).starts_with("signal 9 (SIGKILL"));
  CHECK(signal_name(1000).find("1000") != std::string::npos);
}

TEST_CASE("wait statuses: text, exit code, success") {
  int killed = status_of_child([] { raise(SIGKILL); });
  CHECK(describe_wait_status(killed).find("SIGKILL") != std::string::npos);
  CHECK(shell_exit_code(killed) == 128 + SIGKILL);
  CHECK_FALSE(succeeded(killed));
  int three = status_of_child([] { _exit(3); });
  CHECK(describe_wait_status(three) == "exit code 3");
  CHECK(shell_exit_code(three) == 3);
  int ok = status_of_child([] {});
  CHECK(succeeded(ok));
  CHECK(shell_exit_code(ok) == 0);
}

TEST_CASE("choose_devices") {
  CHECK(choose_devices({}, 0).device == "cpu");
  CHECK_FALSE(choose_devices({}, 0).nproc.has_value());
  CHECK(choose_devices({}, 2).device == "cuda");
  auto gpus = choose_devices({.gpus = 2}, 2);
  CHECK(gpus.device == "cuda");
  CHECK(gpus.nproc == 2);
  auto cpu = choose_devices({.nproc = 4, .device = "cpu"}, 0);
  CHECK(cpu.device == "cpu");
  CHECK(cpu.nproc == 4);
  CHECK(choose_devices({.nproc = 3}, 0).device == "cpu");  // auto falls back to CPU ranks
  CHECK_THROWS_WITH_AS(choose_devices({.gpus = 1}, 0), doctest::Contains("this machine has 0 GPU(s)"), ConfigError);
  try {
    choose_devices({.gpus = 1}, 0);
  } catch (const ConfigError& error) {
    CHECK(error.hint().find("--nproc 1 --device cpu") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(choose_devices({.nproc = 3, .device = "cuda"}, 2), doctest::Contains("has 2 GPU(s)"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(choose_devices({.gpus = 2, .device = "cpu"}, 0), doctest::Contains("--device cpu"), ConfigError);
  CHECK_THROWS_AS(choose_devices({.nproc = 2, .gpus = 2}, 2), ConfigError);
  CHECK_THROWS_AS(choose_devices({.nproc = 0}, 0), ConfigError);
  CHECK_THROWS_WITH_AS(choose_devices({.device = "cuda"}, 0), doctest::Contains("--device cuda"), ConfigError);
}

TEST_CASE("check_launch_options") {
  LaunchOptions options;
  CHECK_NOTHROW(check_launch_options(options));
  options.nnodes = 2;
  CHECK_THROWS_WITH_AS(check_launch_options(options), doctest::Contains("--master-port"), ConfigError);
  options.master_port = 29500;
  CHECK_NOTHROW(check_launch_options(options));
  options.node_rank = 2;
  CHECK_THROWS_WITH_AS(check_launch_options(options), doctest::Contains("--node-rank 2"), ConfigError);
  options = {};
  options.max_restarts = -1;
  CHECK_THROWS_AS(check_launch_options(options), ConfigError);
  options = {};
  options.rendezvous_timeout_s = 0;
  CHECK_THROWS_WITH_AS(check_launch_options(options), doctest::Contains("--rendezvous-timeout"), ConfigError);
}

TEST_CASE("more CPU ranks than hardware threads is a one-line warning naming both numbers") {
  auto warning = oversubscription_warning(8, "cpu", 2);
  REQUIRE(warning.has_value());
  CHECK(warning->find("--nproc 8") != std::string::npos);
  CHECK(warning->find("2 hardware thread") != std::string::npos);
  CHECK(warning->find('\n') == std::string::npos);
  CHECK_FALSE(oversubscription_warning(2, "cpu", 2).has_value());
  CHECK_FALSE(oversubscription_warning(8, "cuda", 2).has_value());
  CHECK_FALSE(oversubscription_warning(8, "cpu", 0).has_value());  // unknown count: no guess
}

TEST_CASE("rank environment") {
  RankSpec spec;
  spec.placement.rank = 5;
  spec.placement.local_rank = 1;
  spec.placement.world_size = 8;
  spec.placement.local_world_size = 4;
  spec.placement.node_rank = 1;
  spec.placement.master_addr = "10.0.0.1";
  spec.placement.master_port = 29500;
  spec.placement.store_hosted = true;
  spec.placement.device = "cuda";
  spec.placement.timeout = std::chrono::seconds(30);
  spec.rendezvous_timeout = std::chrono::seconds(7);
  spec.run_dir = "/runs/x";
  spec.restart_count = 2;
  spec.launcher_pid = 77;
  auto env = rank_environment({"PATH=/bin", "RANK=99", "LRHOST_DEVICE=cpu", "MASTER_PORTX=1"}, spec);
  CHECK(contains(env, "PATH=/bin"));
  CHECK(contains(env, "MASTER_PORTX=1"));  // only exact names are owned
  CHECK_FALSE(contains(env, "RANK=99"));
  CHECK_FALSE(contains(env, "LRHOST_DEVICE=cpu"));
  for (const char* entry :
       {"RANK=5", "LOCAL_RANK=1", "WORLD_SIZE=8", "LOCAL_WORLD_SIZE=4", "GROUP_RANK=1", "MASTER_ADDR=10.0.0.1",
        "MASTER_PORT=29500", "LRHOST_STORE_HOSTED=1", "LRHOST_DEVICE=cuda", "LRHOST_TIMEOUT_S=30",
        "LRHOST_RUN_DIR=/runs/x", "LRHOST_ERROR_FILE=/runs/x/errors/rank5.json", "LRHOST_RESTART_COUNT=2",
        "LRHOST_LAUNCHER_PID=77", "LRHOST_RENDEZVOUS_TIMEOUT_S=7"})
    CHECK_MESSAGE(contains(env, entry), entry);
  CHECK(std::count_if(env.begin(), env.end(), [](const std::string& e) { return e.starts_with("RANK="); }) == 1);

  // Round trip: what the launcher writes, the rank reads back as the same placement.
  std::vector<std::string> saved;
  for (const auto& entry : env) {
    auto eq = entry.find('=');
    std::string key = entry.substr(0, eq);
    if (const char* old = std::getenv(key.c_str()))
      saved.push_back(key + "=" + old);
    else
      saved.push_back(key);
    setenv(key.c_str(), entry.substr(eq + 1).c_str(), 1);
  }
  auto read = lrhost::dist::rank_env_from_environment();
  auto timing = lrhost::dist::wait_timing_from_environment();
  for (const auto& entry : saved) {
    auto eq = entry.find('=');
    if (eq == std::string::npos)
      unsetenv(entry.c_str());
    else
      setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
  }
  const auto& p = spec.placement;
  CHECK(read.rank == p.rank);
  CHECK(read.local_rank == p.local_rank);
  CHECK(read.world_size == p.world_size);
  CHECK(read.local_world_size == p.local_world_size);
  CHECK(read.node_rank == p.node_rank);
  CHECK(read.master_addr == p.master_addr);
  CHECK(read.master_port == p.master_port);
  CHECK(read.store_hosted);
  CHECK(read.device == p.device);
  CHECK(read.timeout == p.timeout);
  CHECK(timing.rendezvous_timeout == spec.rendezvous_timeout);

  spec.omp_threads = 3;
  auto with_omp = rank_environment({"OMP_NUM_THREADS=8"}, spec);
  CHECK(contains(with_omp, "OMP_NUM_THREADS=3"));
  CHECK_FALSE(contains(with_omp, "OMP_NUM_THREADS=8"));
}

TEST_CASE("run directory names") {
  std::tm when{};
  when.tm_year = 2025 - 1900;
  when.tm_mon = 2;
  when.tm_mday = 1;
  when.tm_hour = 14;
  when.tm_min = 5;
  when.tm_sec = 9;
  when.tm_isdst = -1;
  auto time = std::chrono::system_clock::from_time_t(std::mktime(&when));
  CHECK(run_dir_name("recipes/examples/train.lua", time) == "2025-03-01_14-05-09_train");
  CHECK(run_dir_name("train.lua", time, std::string("slurm-42")) == "slurm-42_train");
  CHECK(error_file_path("/r", 3) == std::filesystem::path("/r/errors/rank3.json"));
  CHECK(log_dir("/r") == std::filesystem::path("/r/logs"));
  auto dir = temporary_folder("run_dir");
  create_run_dir(dir);
  CHECK(std::filesystem::is_directory(dir / "logs"));
  CHECK(std::filesystem::is_directory(dir / "errors"));
  lrhost::test::remove_tree(dir);
}

TEST_CASE("error file round trip") {
  auto dir = temporary_folder("error_file");
  auto path = dir / "errors" / "rank1.json";
  auto record = error_record_for("train.lua:6: boom \"quoted\"\nstack traceback:\n\ttrain.lua:6: in main chunk");
  CHECK(record.message == "train.lua:6: boom \"quoted\"");
  CHECK(record.pid == static_cast<long>(getpid()));
  CHECK(record.time.size() == 20);  // 2025-03-01T14:05:09Z
  auto now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  CHECK(record.time_us > now_us - 10'000'000);
  CHECK(record.time_us <= now_us);
  CHECK_FALSE(record.consequence);
  CHECK(error_record_for("collective 'all_reduce' failed on rank 0: Connection closed by peer").consequence);
  write_error_file(path, record);
  auto back = read_error_file(path);
  REQUIRE(back.has_value());
  CHECK(back->message == record.message);
  CHECK(back->traceback == record.traceback);
  CHECK(back->host == record.host);
  CHECK(back->rank == record.rank);
  CHECK(back->time == record.time);
  CHECK(back->time_us == record.time_us);
  CHECK(back->consequence == record.consequence);
  CHECK_FALSE(read_error_file(dir / "missing.json").has_value());
  // A file from before time_us/consequence existed: 0, and the kind is read from the text.
  std::ofstream(dir / "old.json") << R"({"message": "x: Connection reset by peer", "rank": 1})";
  auto old = read_error_file(dir / "old.json");
  REQUIRE(old.has_value());
  CHECK(old->time_us == 0);
  CHECK(old->consequence);
  std::ofstream(dir / "bad.json") << "[1, 2]";
  CHECK_THROWS_AS(read_error_file(dir / "bad.json"), IoError);
  std::ofstream(dir / "wrong_type.json") << R"({"message": "m", "rank": "one"})";
  CHECK_THROWS_AS(read_error_file(dir / "wrong_type.json"), IoError);
  lrhost::test::remove_tree(dir);
}

TEST_CASE("errors caused by a peer going away are consequences, everything else a cause") {
  for (const char* text : {
           "r.lua:5: collective 'all_reduce' failed on rank 0: [pair.cc:534] Connection closed by peer [127.0.0.1]:4",
           "Read error [10.0.0.2]:1234: Connection reset by peer",
           "NCCL error: remote process exited or there was a network error, ncclRemoteError",
           "collective 'all_gather' on rank 0 timed out after 3 s: rank 1 never reached it",
           "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote peer crash?",
       })
    CHECK_MESSAGE(is_consequence(text), text);
  for (const char* text : {
           "r.lua:3: loss is NaN at step 120",
           "collective 'all_reduce' called inside a main-process-only block",
           "rendezvous timed out after 5 s (--rendezvous-timeout) on rank 0: node 1 (rank 1) never arrived",
           "rank 1 could not reach the rendezvous store at 10.0.0.1:29500 within 120 s: Connection refused",
           "CUDA out of memory. Tried to allocate 2.00 GiB",
       })
    CHECK_MESSAGE(!is_consequence(text), text);
}

namespace {

ErrorRecord record(int rank, std::int64_t time_us, bool consequence, const std::string& message = "m") {
  return {.rank = rank,
          .host = "h",
          .pid = 100 + rank,
          .message = message,
          .traceback = message,
          .time = "",
          .time_us = time_us,
          .consequence = consequence};
}

AttemptOutcome failed_outcome(std::vector<int> statuses, std::size_t first_failure) {
  AttemptOutcome outcome;
  for (std::size_t i = 0; i < statuses.size(); ++i)
    outcome.ranks.push_back({.rank = static_cast<int>(i),
                             .local_rank = static_cast<int>(i),
                             .pid = 100 + static_cast<int>(i),
                             .status = statuses[i],
                             .runtime = std::chrono::duration<double>(1.0 + 0.1 * static_cast<double>(i))});
  outcome.first_failure = first_failure;
  return outcome;
}

}  // namespace

TEST_CASE("root cause: a recorded cause wins over consequences, even one recorded later") {
  int failed = status_of_child([] { _exit(1); });
  // Rank 0 exited first (the launcher saw it first) with a consequence; rank 1 raised.
  auto outcome = failed_outcome({failed, failed}, 0);
  auto cause = choose_root_cause(outcome, {record(0, 1000, true, "peer gone"), record(1, 2000, false, "boom")});
  CHECK(cause.rank == 1);
  CHECK(cause.certain);
  REQUIRE(cause.process.has_value());
  CHECK(*cause.process == 1);
  REQUIRE(cause.error.has_value());
  CHECK(cause.error->message == "boom");
  REQUIRE(cause.others.size() == 1);
  CHECK(cause.others[0].rank == 0);
}

TEST_CASE("root cause: the earliest of several causes wins, ties to the lower rank") {
  int failed = status_of_child([] { _exit(1); });
  auto outcome = failed_outcome({failed, failed, failed}, 0);
  auto cause = choose_root_cause(outcome, {record(0, 900, true), record(1, 3000, false), record(2, 2000, false)});
  CHECK(cause.rank == 2);
  REQUIRE(cause.others.size() == 2);
  CHECK(cause.others[0].rank == 0);  // earliest first
  CHECK(cause.others[1].rank == 1);
  CHECK(choose_root_cause(outcome, {record(2, 5, false), record(1, 5, false)}).rank == 1);
}

TEST_CASE("root cause: without error files, the first rank to exit") {
  int failed = status_of_child([] { _exit(3); });
  int term = status_of_child([] { raise(SIGTERM); });
  auto outcome = failed_outcome({term, failed, failed}, 1);
  outcome.ranks[0].stop_signal = SIGTERM;  // stopped by the launcher: never the cause
  outcome.ranks[2].runtime = std::chrono::duration<double>(0.5);
  auto cause = choose_root_cause(outcome, {});
  CHECK(cause.rank == 2);  // exited before rank 1
  CHECK(cause.certain);
  CHECK_FALSE(cause.error.has_value());
}

TEST_CASE("root cause: a rank killed by a signal without an error file, when others only recorded consequences") {
  int failed = status_of_child([] { _exit(1); });
  int killed = status_of_child([] { raise(SIGKILL); });
  auto outcome = failed_outcome({failed, failed, killed}, 0);
  auto cause = choose_root_cause(outcome, {record(0, 10, true), record(1, 20, true)});
  CHECK(cause.rank == 2);
  CHECK(cause.certain);
  CHECK(cause.others.size() == 2);
  // A recorded cause still beats the killed rank.
  CHECK(choose_root_cause(outcome, {record(0, 10, true), record(1, 20, false)}).rank == 1);
}

TEST_CASE("root cause: only consequences recorded, the earliest one, marked uncertain") {
  int failed = status_of_child([] { _exit(1); });
  int term = status_of_child([] { raise(SIGTERM); });
  auto outcome = failed_outcome({failed, term}, 0);
  outcome.ranks[1].stop_signal = SIGTERM;
  auto cause = choose_root_cause(outcome, {record(0, 10, true, "timed out: rank 1 never reached it")});
  CHECK(cause.rank == 0);
  CHECK_FALSE(cause.certain);
}

TEST_CASE("root cause: a cause recorded by a rank of another node") {
  int failed = status_of_child([] { _exit(1); });
  auto outcome = failed_outcome({failed, failed}, 0);  // ranks 0 and 1 on this node
  auto cause = choose_root_cause(outcome, {record(0, 10, true), record(1, 11, true), record(5, 20, false, "boom")});
  CHECK(cause.rank == 5);
  CHECK_FALSE(cause.process.has_value());
  ReportContext context{"node0", "/runs/x", 0, 0};
  auto report = failure_report(outcome, context, cause);
  CHECK(report.find("rank 5 failed first") != std::string::npos);
  CHECK(report.find("on another node") != std::string::npos);
  CHECK(report.find("error: boom") != std::string::npos);
}

TEST_CASE("failure report names the cause first, then consequences and every other rank") {
  AttemptOutcome outcome;
  int failed_status = status_of_child([] { _exit(1); });
  int killed_status = status_of_child([] { raise(SIGKILL); });
  int term_status = status_of_child([] { raise(SIGTERM); });
  outcome.ranks = {{.rank = 0, .local_rank = 0, .pid = 100, .status = failed_status},
                   {.rank = 1, .local_rank = 1, .pid = 101, .status = failed_status},
                   {.rank = 2, .local_rank = 2, .pid = 102, .status = killed_status, .stop_signal = SIGKILL},
                   {.rank = 3, .local_rank = 3, .pid = 103, .status = term_status, .stop_signal = SIGTERM}};
  outcome.first_failure = 0;
  ReportContext context{"node7", "/runs/x", 0, 0};
  ErrorRecord error{.rank = 1,
                    .host = "node7",
                    .pid = 101,
                    .message = "r.lua:3: boom",
                    .traceback = "r.lua:3: boom\nstack traceback:\n\tr.lua:3: in main chunk",
                    .time = "",
                    .time_us = 20};
  ErrorRecord echo{.rank = 0,
                   .host = "node7",
                   .pid = 100,
                   .message = "r.lua:9: collective failed: Connection closed by peer",
                   .traceback = "",
                   .time = "",
                   .time_us = 10,
                   .consequence = true};
  auto cause = choose_root_cause(outcome, {echo, error});
  auto report = failure_report(outcome, context, cause);
  CHECK(report.find("rank 1 failed first") != std::string::npos);
  CHECK(report.find("node7") != std::string::npos);
  CHECK(report.find("exit code 1") != std::string::npos);
  CHECK(report.find("r.lua:3: boom") != std::string::npos);
  CHECK(report.find("stack traceback") != std::string::npos);
  CHECK(report.find("rank 0 (consequence): r.lua:9: collective failed: Connection closed by peer") !=
        std::string::npos);
  CHECK(report.find("rank 0: failed too: exit code 1") != std::string::npos);
  CHECK(report.find("rank 2: killed with SIGKILL") != std::string::npos);
  CHECK(report.find("rank 3: stopped by the launcher with SIGTERM") != std::string::npos);
  CHECK(report.find("boom") < report.find("Connection closed by peer"));  // the cause comes first
  CHECK(report.find("note:") == std::string::npos);

  outcome.ranks[1].status = killed_status;
  auto no_file = failure_report(outcome, context, choose_root_cause(outcome, {echo}));
  CHECK(no_file.find("rank 1 failed first") != std::string::npos);
  CHECK(no_file.find("SIGKILL") != std::string::npos);
  CHECK(no_file.find("no error file") != std::string::npos);

  auto unreadable = failure_report(outcome, context, choose_root_cause(outcome, {echo}), {{1, "not an error file"}});
  CHECK(unreadable.find("error: not an error file") != std::string::npos);
}

TEST_CASE("interrupt report: ends with the command that continues the run, once a checkpoint recorded it") {
  AttemptOutcome outcome;
  outcome.interrupted_by = SIGINT;
  outcome.ranks = {{.rank = 0,
                    .local_rank = 0,
                    .pid = 100,
                    .status = status_of_child([] { raise(SIGINT); }),
                    .stop_signal = SIGINT}};
  const std::filesystem::path run = temporary_folder("resume_hint");
  std::filesystem::create_directories(run);
  ReportContext context{"node0", run, 0, 0};
  // No checkpoint yet: no command recorded, none printed.
  CHECK_FALSE(recorded_resume_command(run).has_value());
  context.resume_command = recorded_resume_command(run);
  CHECK(interrupt_report(outcome, context).find("lrhost resume") == std::string::npos);
  // What rank 0's checkpoint binding records after a save (note_resumable writes $LRHOST_RUN_DIR's file).
  setenv("LRHOST_RUN_DIR", run.c_str(), 1);
  note_resumable("/data/runs/act");
  unsetenv("LRHOST_RUN_DIR");
  REQUIRE(recorded_resume_command(run) == std::optional<std::string>("lrhost resume /data/runs/act"));
  context.resume_command = recorded_resume_command(run);
  const std::string report = interrupt_report(outcome, context);
  CHECK(report.find("interrupted by SIGINT") != std::string::npos);
  CHECK(report.find("continue this run from its newest checkpoint with:\n  lrhost resume /data/runs/act\n") !=
        std::string::npos);
  lrhost::test::remove_tree(run);
}

TEST_CASE("resume line: repeats the launch flags the job ran with") {
  LaunchOptions options;
  options.nproc = 2;
  options.device = "cpu";
  options.save_signals = parse_save_signals(kDefaultSaveSignals);
  CHECK(resume_flags(options, 0) == "--nproc 2 --device cpu");
  options.device = "cuda";
  CHECK(resume_flags(options, 0) == "--gpus 2");
  // A multi-node job, and every option that differs from its default.
  options.nnodes = 2;
  options.master_addr = "node 0";
  options.master_port = 29500;
  options.max_restarts = 3;
  options.timeout_s = 1200;
  options.rendezvous_timeout_s = 300;
  options.save_signals = parse_save_signals("USR1");
  CHECK(resume_flags(options, 4) ==
        "--gpus 2 --nnodes 2 --node-rank 0 --master-addr 'node 0' --master-port 29500 --max-restarts 3 "
        "--timeout 1200 --rendezvous-timeout 300 --save-on-signal USR1 --threads 4");
  options.save_signals = {};
  CHECK(contains(resume_flags(options, 0), "--save-on-signal none"));
  // One process: only what was given.
  CHECK(resume_flags_in_process("auto", 0).empty());
  CHECK(resume_flags_in_process("cpu", 2) == "--device cpu --threads 2");
  // The command carries $LRHOST_RESUME_FLAGS; a folder with a space is quoted for the shell.
  setenv(kResumeFlagsVariable, "--nproc 2 --device cpu", 1);
  CHECK(resume_command("/data/runs/my act") == "lrhost resume '/data/runs/my act' --nproc 2 --device cpu");
  unsetenv(kResumeFlagsVariable);
  CHECK(resume_command("/data/runs/act") == "lrhost resume /data/runs/act");
}

// The rank side of waiting (host/dist/wait_report.hpp): the sentences a rank prints and raises.
namespace {

lrhost::dist::RankEnv two_nodes_of_two(bool launched = true) {
  lrhost::dist::RankEnv env;
  env.world_size = 4;
  env.local_world_size = 2;
  env.master_addr = "10.0.0.1";
  env.master_port = 29500;
  env.store_hosted = launched;
  env.device = "cpu";
  return env;
}

}  // namespace

TEST_CASE("wait report: rank lists and missing nodes") {
  using namespace lrhost::dist;
  CHECK(rank_list({3}) == "rank 3");
  CHECK(rank_list({2, 3}) == "ranks 2-3");
  CHECK(rank_list({0, 2, 4, 5, 6}) == "ranks 0, 2, 4-6");
  auto env = two_nodes_of_two();
  CHECK(describe_missing({2, 3}, env) == "node 1 (ranks 2-3)");
  CHECK(describe_missing({3}, env) == "rank 3 (node 1)");
  CHECK(describe_missing({1, 2, 3}, env) == "rank 1 (node 0), node 1 (ranks 2-3)");
  env.world_size = env.local_world_size = 3;
  CHECK(describe_missing({2}, env) == "rank 2");  // one node: no node numbers
  auto line = rendezvous_waiting_line({2, 3}, two_nodes_of_two(), {}, std::chrono::seconds(10));
  CHECK(line == "rendezvous: waiting for node 1 (ranks 2-3) for 10 s; 2 of 4 ranks arrived (timeout 120 s)");
}

TEST_CASE("wait report: a rendezvous timeout names the missing node and the command that starts it") {
  using namespace lrhost::dist;
  auto error = rendezvous_timeout_error({2, 3}, two_nodes_of_two(), {});
  CHECK(std::string(error.what()).find("rendezvous timed out after 120 s") != std::string::npos);
  CHECK(std::string(error.what()).find("node 1 (ranks 2-3) never arrived") != std::string::npos);
  CHECK(error.hint().find("lrhost --nproc 2 --device cpu --nnodes 2 --node-rank 1 --master-addr 10.0.0.1 "
                          "--master-port 29500") != std::string::npos);
  auto torchrun = rendezvous_timeout_error({3}, two_nodes_of_two(false), {});
  CHECK(torchrun.hint().find("MASTER_PORT=29500") != std::string::npos);
  auto part = rendezvous_timeout_error({3}, two_nodes_of_two(), {});
  CHECK(part.hint().find("logs") != std::string::npos);

  auto env = two_nodes_of_two();
  env.rank = 2;
  auto unreachable = store_unreachable_error(env, {}, "connection refused");
  CHECK(std::string(unreachable.what()) ==
        "rank 2 could not reach the rendezvous store at 10.0.0.1:29500 within 120 s (--rendezvous-timeout): "
        "connection refused");
  CHECK(unreachable.hint().find("--node-rank 0") != std::string::npos);
  CHECK(store_waiting_line(env, {}, std::chrono::seconds(20)) ==
        "rendezvous: waiting for the store of node 0 at 10.0.0.1:29500 for 20 s (timeout 120 s)");

  setenv("LRHOST_WAIT_REPORT_S", "soon", 1);
  CHECK_THROWS_WITH_AS(wait_timing_from_environment(), doctest::Contains("LRHOST_WAIT_REPORT_S"), ConfigError);
  setenv("LRHOST_WAIT_REPORT_S", "2", 1);
  CHECK(wait_timing_from_environment().report_interval == std::chrono::seconds(2));
  unsetenv("LRHOST_WAIT_REPORT_S");
}

TEST_CASE("wait report: a collective timeout names the ranks that never reached it") {
  using namespace lrhost::dist;
  CHECK(laggards_text(2, {{1, 1}}) == "rank 1 never reached it (rank 1 is at collective #1 of this group, this is #2)");
  auto two = laggards_text(5, {{1, 5}, {2, 3}, {3, std::nullopt}});
  CHECK(two.starts_with("ranks 2-3 never reached it"));
  CHECK(two.find("rank 3 has not published") != std::string::npos);
  CHECK(laggards_text(5, {{1, 5}, {2, 6}}).starts_with("every other rank started it"));
}

TEST_CASE("--save-on-signal: names with or without SIG, any case, none, repeats once; anything else named") {
  CHECK((parse_save_signals("TERM,USR1") == std::vector<int>{SIGTERM, SIGUSR1}));
  CHECK((parse_save_signals(" sigusr2 , Hup ") == std::vector<int>{SIGUSR2, SIGHUP}));
  CHECK((parse_save_signals("TERM,SIGTERM") == std::vector<int>{SIGTERM}));
  CHECK(parse_save_signals("none").empty());
  CHECK((format_save_signals(parse_save_signals("usr1,term")) == "USR1,TERM"));
  CHECK((format_save_signals({}) == "none"));
  for (const char* bad : {"KILL", "TERM,", "SIGSEGV", "", "TERM;USR1"})
    CHECK_MESSAGE(contains(lrhost::test::described_error([&] { parse_save_signals(bad); }),
                           "--save-on-signal '" + std::string(bad) + "'"),
                  bad);
  CHECK(contains(lrhost::test::described_error([&] { parse_save_signals("KILL"); }),
                 "'KILL' is not a signal it accepts"));
  CHECK(contains(lrhost::test::described_error([&] { parse_save_signals("KILL"); }), "the default is TERM,USR1"));
  // The variable the ranks read: unset means the default; a bad value names the variable.
  ::unsetenv(kSaveOnSignalVariable);
  CHECK((save_signals_from_environment() == std::vector<int>{SIGTERM, SIGUSR1}));
  ::setenv(kSaveOnSignalVariable, "usr2", 1);
  CHECK((save_signals_from_environment() == std::vector<int>{SIGUSR2}));
  ::setenv(kSaveOnSignalVariable, "nope", 1);
  CHECK(contains(lrhost::test::described_error([] { save_signals_from_environment(); }),
                 "$LRHOST_SAVE_ON_SIGNAL 'nope'"));
  ::unsetenv(kSaveOnSignalVariable);
}
