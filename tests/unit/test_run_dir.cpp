// Unit tests of the run folder's ownership: unique default names (claimed with mkdir), the lock that
// keeps a second job out (named holder, released when the holder dies), the check that keeps a fresh
// run from overwriting an earlier run's checkpoints, --overwrite reaching the ranks, log files
// that are appended under attempt headers instead of truncated, the removal of a claimed folder whose
// run failed before it started, and where `lrhost eval` keeps its logs.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/eval_run_dir.hpp"
#include "host/launch/error_file.hpp"
#include "host/launch/output_dir_lock.hpp"
#include "host/launch/rank_environment.hpp"
#include "host/launch/run_dir.hpp"
#include "host/launch/run_lock.hpp"
#include "host/launch/unused_run_dir.hpp"
#include "host/util/error.hpp"
#include "host/util/log.hpp"
#include "host/util/log_file.hpp"
#include "test_support.hpp"

using lrhost::test::contains;

namespace fs = std::filesystem;
using namespace lrhost::launch;
using lrhost::test::TempDir;
using lrhost::util::ConfigError;

namespace {

// Sets (or with nullptr unsets) an environment variable for one scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Changes the working directory for one scope (default_run_dir works under it).
class ScopedCwd {
 public:
  explicit ScopedCwd(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ScopedCwd() { fs::current_path(old_); }
  ScopedCwd(const ScopedCwd&) = delete;
  ScopedCwd& operator=(const ScopedCwd&) = delete;

 private:
  fs::path old_;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string lock_error(const fs::path& run_dir) {
  try {
    RunDirLock::acquire(run_dir);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("claim_new_folder: a taken name gets the next free suffix") {
  TempDir temp("run_dir_claim");
  auto first = claim_new_folder(temp / "outputs/lrhost", "2025-03-01_14-05-09_train");
  auto second = claim_new_folder(temp / "outputs/lrhost", "2025-03-01_14-05-09_train");
  auto third = claim_new_folder(temp / "outputs/lrhost", "2025-03-01_14-05-09_train");
  CHECK(first.filename() == "2025-03-01_14-05-09_train");
  CHECK(second.filename() == "2025-03-01_14-05-09_train_2");
  CHECK(third.filename() == "2025-03-01_14-05-09_train_3");
  CHECK(fs::is_directory(first));
  CHECK(fs::is_directory(second));
  CHECK(fs::is_directory(third));
}

TEST_CASE("claim_new_folder: processes racing for one name all get their own folder") {
  TempDir temp("run_dir_race");
  constexpr int kProcesses = 6;
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      ::close(pipe_fds[0]);
      int code = 0;
      try {
        std::string name = claim_new_folder(temp.path, "same_second_train").filename().string() + "\n";
        if (write(pipe_fds[1], name.data(), name.size()) != static_cast<ssize_t>(name.size())) code = 2;
      } catch (...) {
        code = 1;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  ::close(pipe_fds[1]);
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  std::string all;
  char buffer[256];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) all.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  std::vector<std::string> names;
  std::istringstream lines(all);
  for (std::string line; std::getline(lines, line);) {
    CHECK_FALSE(contains(names, line));
    names.push_back(line);
  }
  CHECK(names.size() == kProcesses);
}

TEST_CASE("default_run_dir: two jobs of one recipe in the same second get two folders") {
  TempDir temp("run_dir_default");
  ScopedCwd cwd(temp.path);
  ScopedEnv rank("RANK", nullptr), elastic("TORCHELASTIC_RUN_ID", nullptr), slurm("SLURM_JOB_ID", nullptr);
  auto a = default_run_dir("recipes/train.lua");
  auto b = default_run_dir("recipes/train.lua");
  CHECK(a != b);
  CHECK(fs::is_directory(a));
  CHECK(fs::is_directory(b));
  CHECK(a.parent_path() == fs::current_path() / "outputs" / "lrhost");
  CHECK(a.filename().string().ends_with("_train"));

  SUBCASE("a Slurm job's ranks still agree on one deterministic folder") {
    ScopedEnv job("SLURM_JOB_ID", "42");
    CHECK(default_run_dir("train.lua") == fs::current_path() / "outputs/lrhost/slurm-42_train");
    CHECK(default_run_dir("train.lua") == fs::current_path() / "outputs/lrhost/slurm-42_train");
  }
}

TEST_CASE("run folder lock: a second job fails naming the holder") {
  TempDir temp("run_dir_lock");
  {
    auto lock = RunDirLock::acquire(temp.path);
    CHECK(lock.path() == temp / ".lock");
    CHECK(read_text(temp / ".lock").find("\"pid\":" + std::to_string(getpid())) != std::string::npos);
    // flock conflicts between open file descriptions, so a second acquire in this process stands in
    // for a second job.
    std::string error = lock_error(temp.path);
    CHECK(error.find("run folder '" + temp.path.string() + "' is in use by another job") != std::string::npos);
    CHECK(error.find("pid " + std::to_string(getpid()) + " on host " + host_name()) != std::string::npos);
  }
  // Released with the holder: the next job gets it, the file left behind does not matter.
  CHECK(fs::exists(temp / ".lock"));
  CHECK(lock_error(temp.path).empty());
}

TEST_CASE("run folder lock: held by another process, released by the kernel when it dies") {
  TempDir temp("run_dir_lock_child");
  int ready[2], release[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(release) == 0);
  pid_t child = fork();
  if (child == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    try {
      auto lock = RunDirLock::acquire(temp.path);
      char byte = 1;
      if (write(ready[1], &byte, 1) != 1) _exit(2);
      ssize_t ignored = read(release[0], &byte, 1);  // holds the lock until the parent kills it
      (void)ignored;
    } catch (...) {
      _exit(1);
    }
    _exit(0);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char byte = 0;
  REQUIRE(read(ready[0], &byte, 1) == 1);
  std::string error = lock_error(temp.path);
  CHECK(error.find("is in use by another job: pid " + std::to_string(child) + " on host ") != std::string::npos);
  CHECK(error.find("(started 20") != std::string::npos);
  // A holder that dies without cleaning up (SIGKILL) must not block the next job.
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  ::close(ready[0]);
  ::close(release[1]);
  CHECK(lock_error(temp.path).empty());
}

TEST_CASE("run folder lock: a lock file naming a dead process does not block") {
  TempDir temp("run_dir_lock_stale");
  std::ofstream(temp / ".lock") << R"({"pid": 999999999, "host": "elsewhere", "started": "2020-01-01T00:00:00Z"})";
  auto lock = RunDirLock::acquire(temp.path);
  CHECK(read_text(temp / ".lock").find("999999999") == std::string::npos);
  CHECK(lock_name_for_node(0) == ".lock");
  CHECK(lock_name_for_node(2) == ".lock.node2");
  // Nodes of one job lock their own files, so they never conflict with each other.
  CHECK_NOTHROW(RunDirLock::acquire(temp.path, lock_name_for_node(1)));
}

TEST_CASE("output folder lock: shared within a process, refused to another job, beside the run folder's") {
  TempDir temp("output_dir_lock");
  fs::path out = temp / "out";
  {
    auto first = claim_output_dir(out);  // creates the folder
    CHECK(first->path() == fs::weakly_canonical(out) / kOutputDirLockName);
    // A second claim in this process (another checkpoint manager) shares the lock.
    auto second = claim_output_dir(temp.path.string() + "/./out/");
    CHECK(second.get() == first.get());
    // Another job: its own open file description of the lock file, as RunDirLock::acquire opens it.
    std::string error;
    try {
      RunDirLock::acquire(out, kOutputDirLockName, {"output folder", "output_dir=DIR"});
    } catch (const ConfigError& e) {
      error = e.what();
    }
    CHECK(contains(error, "output folder '" + out.string() + "' is in use by another job: pid " +
                              std::to_string(getpid()) + " on host " + host_name()));
    // The front door makes output_dir the run folder: its .lock is another file.
    CHECK_NOTHROW(RunDirLock::acquire(out));
  }
  // Released with the last claim.
  CHECK_NOTHROW(RunDirLock::acquire(out, kOutputDirLockName));
}

TEST_CASE("--overwrite reaches the ranks through LRHOST_OVERWRITE") {
  RankSpec spec;
  spec.run_dir = "/runs/x";
  auto plain = rank_environment({"LRHOST_OVERWRITE=1"}, spec);  // a stale value never leaks into a job
  CHECK_FALSE(contains(plain, "LRHOST_OVERWRITE=1"));
  spec.overwrite = true;
  CHECK(contains(rank_environment({}, spec), "LRHOST_OVERWRITE=1"));
}

TEST_CASE("log files: appended under one attempt header per open, never truncated") {
  TempDir temp("run_dir_logs");
  auto when = std::chrono::system_clock::from_time_t(1700000000);  // 2023-11-14T22:13:20Z
  CHECK(lrhost::util::attempt_header(2, 1, when, 1234) ==
        "===== attempt 2 (restart 1) started 2023-11-14T22:13:20Z pid 1234 =====");
  CHECK(lrhost::util::attempt_header(1, std::nullopt, when, 7) ==
        "===== attempt 1 started 2023-11-14T22:13:20Z pid 7 =====");

  const auto file = temp / "rank0.log";
  CHECK(lrhost::util::count_attempt_headers(file) == 0);
  CHECK(lrhost::util::append_attempt_header(file, 0).starts_with("===== attempt 1 (restart 0) started "));
  std::ofstream(file, std::ios::app) << "first attempt's line\npartial line of a killed process";
  CHECK(lrhost::util::append_attempt_header(file, 1).starts_with("===== attempt 2 (restart 1) started "));
  std::string text = read_text(file);
  CHECK(text.find("first attempt's line\npartial line of a killed process\n===== attempt 2 ") != std::string::npos);
  CHECK(lrhost::util::count_attempt_headers(file) == 2);

  // The logger itself: a second setup (a later job in the same run folder) keeps the first one's lines.
  const auto logs = temp / "logs";
  lrhost::util::setup_logging({.rank = 3, .log_dir = logs.string(), .restart_count = 0});
  spdlog::warn("said by the first job");
  lrhost::util::setup_logging({.rank = 3, .log_dir = logs.string(), .restart_count = 0});
  spdlog::warn("said by the second job");
  spdlog::default_logger()->flush();
  lrhost::util::setup_logging({});  // console only again, no file of this test left open
  text = read_text(logs / "rank3.log");
  CHECK(text.find("said by the first job") != std::string::npos);
  CHECK(text.find("said by the second job") != std::string::npos);
  CHECK(lrhost::util::count_attempt_headers(logs / "rank3.log") == 2);
  CHECK(text.find("===== attempt 2 (restart 0) started ") != std::string::npos);
}

TEST_CASE("unused run folder: removed after a failure before the run started, kept otherwise") {
  TempDir tmp("unused_run_dir");
  auto make = [&](const std::string& name) {
    const fs::path dir = claim_new_folder(tmp.path / "outputs" / "lrhost", name);
    create_run_dir(dir);
    std::ofstream(log_dir(dir) / "rank0.log") << "lrhost: error: unknown config key\n";
    return dir;
  };
  // Failed (error file) with only logs/, errors/ and .lock: removed, with outputs/lrhost/ once empty.
  const fs::path failed = make("failed");
  std::ofstream(failed / ".lock") << "";
  std::ofstream(error_file_path(failed, 0)) << "{}";
  CHECK(holds_only_bookkeeping(failed));
  { UnusedRunDirCleanup cleanup(failed, 0); }
  CHECK_FALSE(fs::exists(failed));
  CHECK_FALSE(fs::exists(tmp.path / "outputs" / "lrhost"));

  // Succeeded (no error file): kept.
  const fs::path succeeded = make("succeeded");
  { UnusedRunDirCleanup cleanup(succeeded, 0); }
  CHECK(fs::exists(log_dir(succeeded) / "rank0.log"));

  // Failed, but the recipe wrote something of its own (a checkpoint, metrics): kept.
  const fs::path wrote = make("wrote");
  std::ofstream(error_file_path(wrote, 0)) << "{}";
  fs::create_directories(wrote / "checkpoints");
  CHECK_FALSE(holds_only_bookkeeping(wrote));
  { UnusedRunDirCleanup cleanup(wrote, 0); }
  CHECK(fs::exists(wrote / "checkpoints"));

  // A moved-from guard does nothing; the guard it moved into decides.
  const fs::path moved = make("moved");
  std::ofstream(error_file_path(moved, 0)) << "{}";
  {
    UnusedRunDirCleanup first(moved, 0);
    UnusedRunDirCleanup second(std::move(first));
    { UnusedRunDirCleanup gone(std::move(second)); }
    CHECK_FALSE(fs::exists(moved));
  }

  // Once a run started (lr.accelerator, an optimizer), its folder is kept even when it fails.
  const fs::path started = make("started");
  std::ofstream(error_file_path(started, 0)) << "{}";
  mark_run_started();
  CHECK(run_started());
  { UnusedRunDirCleanup cleanup(started, 0); }
  CHECK(fs::exists(log_dir(started) / "rank0.log"));
}

TEST_CASE("lrhost eval: logs go to the evaluated run's eval/logs/, whatever folder it is given as") {
  TempDir tmp("eval_run_dir");
  const fs::path run = tmp.path / "run";
  const fs::path step = run / "checkpoints" / "000040";
  fs::create_directories(step / "pretrained_model");
  std::ofstream(step / "pretrained_model" / "config.json") << "{}";
  fs::create_directory_symlink("000040", run / "checkpoints" / "last");
  const fs::path canonical_run = fs::canonical(run);
  CHECK(lrhost::cli::evaluated_run_folder(run) == canonical_run);
  CHECK(lrhost::cli::evaluated_run_folder(run / "checkpoints" / "last") == canonical_run);
  CHECK(lrhost::cli::evaluated_run_folder(step) == canonical_run);
  CHECK(lrhost::cli::evaluated_run_folder(step / "pretrained_model") == canonical_run);
  // A bare pretrained folder (save_pretrained) is its own run folder; anything else is not known.
  fs::create_directories(tmp.path / "bare");
  std::ofstream(tmp.path / "bare" / "config.json") << "{}";
  CHECK(lrhost::cli::evaluated_run_folder(tmp.path / "bare") == fs::canonical(tmp.path / "bare"));
  CHECK_FALSE(lrhost::cli::evaluated_run_folder(tmp.path).has_value());

  // $LRHOST_RUN_DIR would choose the folder itself (as --run-dir does): not set for this check.
  const char* inherited = std::getenv("LRHOST_RUN_DIR");
  const std::optional<std::string> saved = inherited ? std::optional<std::string>(inherited) : std::nullopt;
  unsetenv("LRHOST_RUN_DIR");
  std::optional<std::string> run_dir;
  lrhost::cli::choose_eval_run_dir(run_dir, step);
  if (saved) setenv("LRHOST_RUN_DIR", saved->c_str(), 1);
  REQUIRE(run_dir.has_value());
  CHECK(fs::path(*run_dir).parent_path() == canonical_run / "eval" / "logs");
  CHECK(fs::is_directory(*run_dir));
  CHECK(fs::path(*run_dir).filename().string().ends_with("_eval"));
  // --run-dir wins; so does nothing known about the checkpoint (the default then applies).
  std::optional<std::string> given = std::string("/somewhere/else");
  lrhost::cli::choose_eval_run_dir(given, step);
  CHECK(*given == "/somewhere/else");
  std::optional<std::string> unknown;
  lrhost::cli::choose_eval_run_dir(unknown, tmp.path);
  CHECK_FALSE(unknown.has_value());
}
