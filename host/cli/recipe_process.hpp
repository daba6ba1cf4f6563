// Setup of a process that runs a recipe itself: a plain `lrhost RECIPE` run (rank 0 of 1), a rank
// started by lrhost's launcher, or one started by torchrun/Slurm with RANK etc. set. Fills in the
// lrhost variables a launcher would have exported (LRHOST_RUN_DIR, LRHOST_DEVICE, LRHOST_TIMEOUT_S,
// LRHOST_ERROR_FILE, LRHOST_OVERWRITE) when they are missing, creates the run directory (removed
// again if a plain run fails before it starts: unused_run_dir.hpp), takes its lock when no launcher
// holds it, and installs rank logging, so the recipe and the distributed
// code see one contract however the process was started.
#pragma once
#include <optional>
#include <string>

#include "host/launch/run_lock.hpp"
#include "host/launch/unused_run_dir.hpp"

namespace lrhost::cli {

struct RecipeProcessOptions {
  std::string recipe;
  bool verbose = false;
  std::optional<std::string> run_dir;  // --run-dir
  std::string device = "auto";         // --device
  int timeout_s = 600;                 // --timeout
  bool overwrite = false;              // --overwrite
};

struct RecipeProcess {
  int rank = 0;
  // The run folder's lock, held for the process's life by a process that nothing launched (a plain
  // run, or rank 0 of a torchrun/Slurm job); empty for ranks of lrhost's launcher, which holds it.
  std::optional<launch::RunDirLock> run_dir_lock;
  // Removes the folder this process claimed when the run fails before it starts (declared last, so it
  // acts before the lock is released).
  launch::UnusedRunDirCleanup unused_run_dir;
};

// Throws util::ConfigError (e.g. --device cuda without a GPU, the run folder locked by another
// job) or util::IoError (run directory not creatable).
RecipeProcess prepare_recipe_process(const RecipeProcessOptions& options);

}  // namespace lrhost::cli
