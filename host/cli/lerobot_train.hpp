// `lrhost lerobot-train ...`: the front door for LeRobot users. It takes the command line of
// lerobot-train 0.6.1 (`--policy.path=...`, `--dataset.repo_id=...`, `--batch_size=12`, ...) together
// with accelerate's launch options (`--num_processes=4`, `--mixed_precision=bf16`, `--multi_gpu`),
// maps each flag onto the shipped recipe of the policy type through one table (kLeRobotFlags in
// lerobot_train.cpp; docs/lerobot.md shows the same table), and returns the equivalent
// `lrhost RECIPE key=value ...` (or `lrhost resume ...`) that main.cpp prints and runs. A flag lrhost
// cannot honour is a ConfigError naming it and saying why; a flag that has no effect in lrhost
// (DataLoader tuning, wandb) is accepted with a note saying what happens instead.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::cli {

struct LeRobotTrainPlan {
  std::string recipe;                                // the shipped recipe (empty when resuming)
  std::vector<std::string> overrides;                // key=value for the recipe (or for the resumed run)
  std::optional<int> nproc;                          // --num_processes / --nproc
  std::optional<int> gpus;                           // --gpus
  std::string device = "auto";                       // --policy.device / --device
  std::optional<std::string> run_dir;                // the run's folder: its output_dir (logs beside checkpoints)
  std::optional<std::filesystem::path> resume_from;  // --resume=true: the checkpoint to continue
  std::vector<std::string> notes;                    // accepted flags that act differently in lrhost
  std::vector<std::string> warnings;                 // accepted, but the user must act (nothing uploaded)
  std::optional<int> master_port;                    // --main_process_port (with several processes)
  bool dry_run = false;                              // --dry-run: print the lrhost command, run nothing
  bool verbose = false;
  bool overwrite = false;  // --overwrite: a fresh run in a folder with checkpoints
  bool all_gpus = false;   // --multi_gpu without a count: one rank per visible GPU
  // accelerate's config file (--config_file, else accelerate's saved default): the file and how each
  // of its keys maps (accelerate_config.hpp), printed before the run; empty without one.
  std::vector<std::string> accelerate_config;
  // --gpu_ids=0,1 (or the config file's gpu_ids): CUDA_VISIBLE_DEVICES for the run.
  std::optional<std::string> cuda_visible_devices;

  // The lrhost command line this plan runs, quoted for a POSIX shell.
  std::string equivalent_command() const;
};

// Translates lerobot-train's and accelerate's flags (everything after `lrhost lerobot-train`).
// A dash-less `key=value` is lerobot-train's --key=value when the table has that flag (LeRobot's
// Chinese guide writes `batch_size=16`), except optimizer.* and eval.*, which are lrhost recipe keys;
// any other `key=value` passes through as an lrhost override. `$(which lerobot-train)` and a path
// ending in lerobot_train.py are skipped. ConfigError for a flag that is unknown, malformed or cannot
// be honoured, naming it.
// `default_config`: accelerate's saved default config, read when no --config_file is given
// (main.cpp passes default_accelerate_config()).
LeRobotTrainPlan plan_lerobot_train(const std::vector<std::string>& arguments,
                                    const std::optional<std::filesystem::path>& default_config = std::nullopt);

// The lerobot-train flags of the mapping table, for suggestions and `lrhost lerobot-train --help`.
std::string lerobot_train_help();

// When a run/show argument such as `--batch_size=4` looks like a lerobot-train flag, the hint that
// lrhost takes `batch_size=4` (or the front door); empty otherwise.
std::string lerobot_style_flag_hint(const std::string& argument);

}  // namespace lrhost::cli
