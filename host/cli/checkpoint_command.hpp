// `lrhost checkpoint verify DIR` (see verify_checkpoints), `lrhost checkpoint merge DIR --out OUT` (a LoRA
// checkpoint folded into a plain policy folder, ckpt/merge_adapters.hpp) and `lrhost checkpoint info DIR`: what a
// checkpoint holds (step, policy type and size, config summary, optimizer/scheduler/sampler state, file sizes) and
// whether it is complete; DIR may be an output dir, its checkpoints/ folder, one step folder or a pretrained_model
// folder. And the planning half of `lrhost resume CHECKPOINT_DIR`: which recipe copy and overrides re-run the training,
// with the checkpoint to continue from (main.cpp runs it like `lrhost run`, launch flags included).
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::cli {

struct CheckpointCommand {
  CLI::App* info = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* merge = nullptr;
  std::string path;
  std::string out;  // merge --out
};

void add_checkpoint_command(CLI::App& app, CheckpointCommand& command);
// Runs `checkpoint info` when it was parsed; returns the exit code, or -1 when it was not.
int run_checkpoint_command(const CheckpointCommand& command);
// `checkpoint verify DIR`: checks a step folder, or every complete checkpoint of an output or
// checkpoints folder, against its checksums.json; prints one line per checkpoint ("verified",
// "unverified (no manifest)", or each mismatching file with its byte range); returns 1 when any data
// does not match, else 0.
int verify_checkpoints(const std::filesystem::path& path, std::ostream& out);
// The report `checkpoint info` prints (throws IoError / DataError naming the file on bad input).
std::string checkpoint_info(const std::filesystem::path& path);

// The line `checkpoint info` leads with: "policy act, steps 100000, batch_size 8, lr 1e-05, dataset
// lerobot/pusht", from the run's train_config.json (a recipe's lr.config or LeRobot's
// TrainPipelineConfig) and the policy's config.json; fields found in neither are left out.
std::string training_summary(const nlohmann::ordered_json& train_config, const nlohmann::ordered_json& policy_config);

struct ResumePlan {
  std::filesystem::path step_dir;                    // the checkpoint to continue from (its recipe copy runs)
  std::filesystem::path resume_from;                 // what the ranks resume from: step_dir when the user named
                                                     // it, else the folder given (they fall back past damaged data)
  std::string recipe;                                // the recipe copy stored in the checkpoint
  std::optional<std::filesystem::path> modules_dir;  // its Lua modules (train_modules/), searched first
  std::vector<std::string> overrides;                // the run's overrides + output_dir=... + resume=true
  std::vector<std::string> warnings;                 // what cannot be restored (a lerobot-train run)
  std::vector<std::string> notes;  // overrides adapted to the resumed job (dp_shard of the old rank count)
};
// Reads <step>/pretrained_model/train_launch.json and train_config.json; ConfigError when the
// recipe cannot resume (no copy, or its config has no `resume` key). A lerobot-train checkpoint
// (no snapshot, LeRobot's train_config.json) maps onto the shipped recipe (lerobot_resume.hpp).
ResumePlan plan_resume(const std::filesystem::path& checkpoint);

}  // namespace lrhost::cli
