// `lrhost resume` of a run written by LeRobot's `lerobot-train`. Its checkpoints have lrhost's
// layout (which is LeRobot's) but no recipe snapshot, so the run's TrainPipelineConfig
// (pretrained_model/train_config.json) and policy config (config.json) are mapped onto the shipped
// recipe of its policy type (recipes/<type>_ddp.lua) as command-line overrides: no field has to be
// retyped. What lrhost cannot restore (Python/NumPy RNG state, the sampler position) or does
// differently comes back as warnings for the user.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lrhost::cli {

struct LeRobotResumePlan {
  std::string recipe;                  // the shipped recipe for the policy type
  std::vector<std::string> overrides;  // key=value, ending with output_dir=... and resume=true
  std::vector<std::string> warnings;
};

// True when `train_config` is LeRobot's TrainPipelineConfig (a "policy" object with a "type" and a
// "dataset" object) rather than an lrhost recipe config.
bool is_lerobot_train_config(const nlohmann::ordered_json& train_config);

// `step_dir` is checkpoints/<step> of the LeRobot run. ConfigError naming the field and the fix
// for a policy type without a shipped recipe, or a dataset that is neither a local root nor in the
// Hugging Face cache.
LeRobotResumePlan plan_lerobot_resume(const std::filesystem::path& step_dir, const nlohmann::ordered_json& train_config,
                                      const nlohmann::ordered_json& policy_config);

}  // namespace lrhost::cli
