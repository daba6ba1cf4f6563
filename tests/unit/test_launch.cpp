// Unit tests of host/launch: signal and wait-status naming, device/flag resolution, rank
// environment construction, run-dir naming, the error-file round trip and the failure report.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "host/dist/rank_env.hpp"
#include "host/launch/error_file.hpp"
#include "host/launch/failure_report.hpp"
#include "host/launch/launch_options.hpp"
#include "host/launch/rank_environment.hpp"
#include "host/launch/run_dir.hpp"
#include "host/launch/signals.hpp"
#include "host/util/error.hpp"

using namespace lrhost::launch;
using lrhost::util::ConfigError;
using lrhost::util::IoError;

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

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// std::filesystem::remove_all is avoided: the libtorch.so of the pinned wheel exports its own copy
// of that symbol, which crashes on a non-empty folder when the dynamic linker binds to it.
void remove_tree(const std::filesystem::path& path) {
  std::string command = "rm -rf '" + path.string() + "'";
  CHECK(std::system(command.c_str()) == 0);
}

std::filesystem::path temporary_folder(const std::string& name) {
  auto path = std::filesystem::temp_directory_path() / ("lrhost_test_launch_" + name + "_" + std::to_string(getpid()));
  remove_tree(path);
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
        "LRHOST_LAUNCHER_PID=77"})
    CHECK_MESSAGE(contains(env, entry), entry);
  CHECK(std::count_if(env.begin(), env.end(), [](const std::string& e) { return e.starts_with("RANK="); }) == 1);

  // Round trip: what the launcher writes, the rank reads back as the same placement.
  std::vector<std::string> saved;
  for (const auto& entry : env) {
    auto eq = entry.find('=');
    std::string key = entry.substr(0, eq);
    if (const char* old = std::getenv(key.c_str())) saved.push_back(key + "=" + old);
    else saved.push_back(key);
    setenv(key.c_str(), entry.substr(eq + 1).c_str(), 1);
  }
  auto read = lrhost::dist::rank_env_from_environment();
  for (const auto& entry : saved) {
    auto eq = entry.find('=');
    if (eq == std::string::npos) unsetenv(entry.c_str());
    else setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
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
  remove_tree(dir);
}

TEST_CASE("error file round trip") {
  auto dir = temporary_folder("error_file");
  auto path = dir / "errors" / "rank1.json";
  auto record = error_record_for("train.lua:6: boom \"quoted\"\nstack traceback:\n\ttrain.lua:6: in main chunk");
  CHECK(record.message == "train.lua:6: boom \"quoted\"");
  CHECK(record.pid == static_cast<long>(getpid()));
  CHECK(record.time.size() == 20);  // 2025-03-01T14:05:09Z
  write_error_file(path, record);
  auto back = read_error_file(path);
  REQUIRE(back.has_value());
  CHECK(back->message == record.message);
  CHECK(back->traceback == record.traceback);
  CHECK(back->host == record.host);
  CHECK(back->rank == record.rank);
  CHECK(back->time == record.time);
  CHECK_FALSE(read_error_file(dir / "missing.json").has_value());
  std::ofstream(dir / "bad.json") << "[1, 2]";
  CHECK_THROWS_AS(read_error_file(dir / "bad.json"), IoError);
  std::ofstream(dir / "wrong_type.json") << R"({"message": "m", "rank": "one"})";
  CHECK_THROWS_AS(read_error_file(dir / "wrong_type.json"), IoError);
  remove_tree(dir);
}

TEST_CASE("failure report names the rank, the cause and every other rank") {
  AttemptOutcome outcome;
  int failed_status = status_of_child([] { _exit(1); });
  int killed_status = status_of_child([] { raise(SIGKILL); });
  int term_status = status_of_child([] { raise(SIGTERM); });
  outcome.ranks = {{.rank = 0, .local_rank = 0, .pid = 100, .status = term_status, .stop_signal = SIGTERM},
                   {.rank = 1, .local_rank = 1, .pid = 101, .status = failed_status},
                   {.rank = 2, .local_rank = 2, .pid = 102, .status = killed_status, .stop_signal = SIGKILL}};
  outcome.first_failure = 1;
  ReportContext context{"node7", "/runs/x", 0, 0};
  ErrorRecord error{1, "node7", 101, "r.lua:3: boom", "r.lua:3: boom\nstack traceback:\n\tr.lua:3: in main chunk", ""};
  auto report = failure_report(outcome, context, error);
  CHECK(report.find("rank 1 failed first") != std::string::npos);
  CHECK(report.find("node7") != std::string::npos);
  CHECK(report.find("exit code 1") != std::string::npos);
  CHECK(report.find("r.lua:3: boom") != std::string::npos);
  CHECK(report.find("stack traceback") != std::string::npos);
  CHECK(report.find("rank 0: stopped by the launcher with SIGTERM") != std::string::npos);
  CHECK(report.find("rank 2: killed with SIGKILL") != std::string::npos);

  outcome.ranks[1].status = killed_status;
  auto no_file = failure_report(outcome, context, std::nullopt);
  CHECK(no_file.find("SIGKILL") != std::string::npos);
  CHECK(no_file.find("no error file") != std::string::npos);
}
