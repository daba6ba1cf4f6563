// Setup of a process that runs a recipe itself: a plain `lrhost RECIPE` run (rank 0 of 1), a rank
// started by lrhost's launcher, or one started by torchrun/Slurm with RANK etc. set. Fills in the
// lrhost variables a launcher would have exported (LRHOST_RUN_DIR, LRHOST_DEVICE, LRHOST_TIMEOUT_S,
// LRHOST_ERROR_FILE) when they are missing, creates the run directory and installs rank logging,
// so the recipe and the distributed code see one contract however the process was started.
#pragma once
#include <optional>
#include <string>

namespace lrhost::cli {

struct RecipeProcessOptions {
  std::string recipe;
  bool verbose = false;
  std::optional<std::string> run_dir;  // --run-dir
  std::string device = "auto";         // --device
  int timeout_s = 600;                 // --timeout
};

// Returns this process's rank. Throws util::ConfigError (e.g. --device cuda without a GPU) or
// util::IoError (run directory not creatable).
int prepare_recipe_process(const RecipeProcessOptions& options);

}  // namespace lrhost::cli
