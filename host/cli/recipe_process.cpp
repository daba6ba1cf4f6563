// Environment defaults, run directory and logging of a recipe-running process. Explicit flags win
// over inherited variables, inherited variables over defaults: a launched rank gets everything from
// its launcher, a torchrun rank from its flags and the defaults.
#include "host/cli/recipe_process.hpp"

#include <spdlog/spdlog.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "host/launch/launch_options.hpp"
#include "host/launch/parent_watch.hpp"
#include "host/launch/resume_hint.hpp"
#include "host/launch/run_dir.hpp"
#include "host/util/log.hpp"

namespace lrhost::cli {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// Ranks of lrhost's launcher run under its lock. Without a launcher the process locks the folder
// itself; of a torchrun/Slurm job only rank 0 does, or the job's ranks would lock each other out.
bool owns_run_dir_lock(int rank) {
  return !env("LRHOST_LAUNCHER_PID") && rank == 0;
}

std::optional<int> restart_count_from_environment() {
  auto text = env("LRHOST_RESTART_COUNT");
  if (!text) return std::nullopt;
  char* end = nullptr;
  long value = std::strtol(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || value < 0 || value > 1'000'000) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

RecipeProcess prepare_recipe_process(const RecipeProcessOptions& options) {
  launch::follow_launcher();
  RecipeProcess process;
  process.rank = util::rank_from_environment();

  // A plain run (no launcher, no torchrun/Slurm rank) that picks the default folder claims a new one.
  const bool claims_default = !options.run_dir && !env("LRHOST_RUN_DIR") && !env("LRHOST_LAUNCHER_PID") && !env("RANK");
  std::filesystem::path run_dir = options.run_dir         ? std::filesystem::path(*options.run_dir)
                                  : env("LRHOST_RUN_DIR") ? std::filesystem::path(*env("LRHOST_RUN_DIR"))
                                                          : launch::default_run_dir(options.recipe);
  run_dir = std::filesystem::absolute(run_dir);
  if (claims_default) process.unused_run_dir = launch::UnusedRunDirCleanup(run_dir, process.rank);
  launch::create_run_dir(run_dir);
  // Before anything writes into the folder (error file, logs): a second job must leave it untouched.
  if (owns_run_dir_lock(process.rank)) process.run_dir_lock = launch::RunDirLock::acquire(run_dir);
  setenv("LRHOST_RUN_DIR", run_dir.c_str(), 1);
  if (options.overwrite) setenv("LRHOST_OVERWRITE", "1", 1);
  if (!env("LRHOST_ERROR_FILE")) setenv("LRHOST_ERROR_FILE", launch::error_file_path(run_dir, process.rank).c_str(), 1);
  if (!env("LRHOST_DEVICE")) {
    auto choice = launch::choose_devices({.device = options.device}, static_cast<int>(torch::cuda::device_count()));
    setenv("LRHOST_DEVICE", choice.device.c_str(), 1);
  }
  if (!env("LRHOST_TIMEOUT_S")) setenv("LRHOST_TIMEOUT_S", std::to_string(options.timeout_s).c_str(), 1);

  // Ctrl-C on a run that nothing launched ends with the command that continues it (a launcher
  // prints it in its interrupt report instead).
  if (!env("LRHOST_LAUNCHER_PID") && process.rank == 0) launch::print_resume_command_on_interrupt();
  util::setup_logging({.rank = process.rank,
                       .verbose = options.verbose,
                       .log_dir = launch::log_dir(run_dir).string(),
                       .restart_count = restart_count_from_environment()});
  spdlog::debug("rank {} of {} (pid {}), device {}, run dir {}, recipe {}", process.rank,
                env("WORLD_SIZE").value_or("1"), static_cast<long>(getpid()), *env("LRHOST_DEVICE"), run_dir.string(),
                options.recipe);
  return process;
}

}  // namespace lrhost::cli
