// Mapping a lerobot-train run onto a shipped recipe; see lerobot_resume.hpp.
#include "host/cli/lerobot_resume.hpp"

#include <set>

#include "host/io/hf_cache.hpp"
#include "host/policy/policy_defaults.hpp"
#include "host/util/error.hpp"
#include "host/util/shipped_paths.hpp"

namespace lrhost::cli {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

// Policy config fields the recipe must not take from LeRobot's config.json: features come from the
// dataset, the device and precision from the launch flags, and the rest is Hub bookkeeping.
const std::set<std::string> kNotCarried = {"type",
                                           "input_features",
                                           "output_features",
                                           "device",
                                           "use_amp",
                                           "use_peft",
                                           "push_to_hub",
                                           "repo_id",
                                           "private",
                                           "tags",
                                           "license",
                                           "pretrained_path",
                                           "pretrained_revision"};

std::string override_value(const ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// LeRobot's dataset location: `dataset.root` when set, else the local folder of its repo_id.
fs::path dataset_root(const ordered_json& dataset) {
  if (dataset.contains("root") && dataset["root"].is_string() && !dataset["root"].get<std::string>().empty())
    return dataset["root"].get<std::string>();
  std::string repo = dataset.value("repo_id", std::string());
  if (repo.empty())
    throw util::ConfigError("train_config.json: dataset has neither 'root' nor 'repo_id'",
                            "pass dataset.root=PATH to `lrhost resume`");
  return io::resolve_lerobot_dataset(repo, "the LeRobot run's dataset.repo_id");
}

}  // namespace

bool is_lerobot_train_config(const ordered_json& train) {
  return train.is_object() && train.contains("policy") && train["policy"].is_object() &&
         train["policy"].contains("type") && train.contains("dataset") && train["dataset"].is_object();
}

LeRobotResumePlan plan_lerobot_resume(const fs::path& step_dir, const ordered_json& train,
                                      const ordered_json& policy_config) {
  LeRobotResumePlan plan;
  const std::string type = policy_config.value("type", train["policy"].value("type", std::string()));
  const fs::path recipe = util::shipped_recipes_dir() / (type + "_ddp.lua");
  std::error_code ec;
  if (!fs::is_regular_file(recipe, ec))
    throw util::ConfigError("the LeRobot run in " + step_dir.string() + " trains a '" + type +
                                "' policy, which has no shipped lrhost recipe (" + recipe.string() + ")",
                            "lrhost resumes LeRobot runs of act and diffusion policies");
  plan.recipe = recipe.string();
  if (train.contains("peft") && !train["peft"].is_null())
    throw util::NotImplemented("the LeRobot run in " + step_dir.string() +
                                   " trains LoRA adapters (train_config.json: peft); resuming a LeRobot LoRA run is "
                                   "not implemented in lrhost",
                               "fine-tune its adapters afresh: lrhost lerobot-train --policy.path=" +
                                   (step_dir / "pretrained_model").string() + " (loads base + adapters)");

  // (num_workers is not carried: LeRobot's are processes, 0 meaning the main one; lrhost's are threads.)
  for (const char* key : {"seed", "steps", "batch_size", "log_freq", "save_freq"})
    if (train.contains(key) && train[key].is_number_integer())
      plan.overrides.push_back(std::string(key) + "=" + train[key].dump());
  // The dataset (a path, not `repo_id`) — the one place a hub name cannot be used as is.
  const ordered_json& dataset = train["dataset"];
  fs::path root = dataset_root(dataset);
  if (!fs::is_directory(root, ec))
    throw util::ConfigError("the LeRobot run's dataset is not on this machine: " + root.string() + " does not exist",
                            "pass dataset.root=PATH (a local copy of the dataset) to `lrhost resume`");
  plan.overrides.push_back("dataset.root=" + root.string());
  if (dataset.contains("episodes") && dataset["episodes"].is_array() && !dataset["episodes"].empty()) {
    plan.overrides.push_back("dataset.episodes=" + dataset["episodes"].dump());
    plan.warnings.push_back("the LeRobot run trained on the episodes " + dataset["episodes"].dump() +
                            "; lrhost's recipe holds out the last eval_episodes of them for evaluation");
  } else
    plan.warnings.push_back(
        "lrhost's recipe holds out the dataset's last eval_episodes episodes for evaluation; "
        "the LeRobot run trained on every episode");
  if (train.contains("optimizer") && train["optimizer"].is_object() && train["optimizer"].contains("grad_clip_norm") &&
      train["optimizer"]["grad_clip_norm"].is_number())
    plan.overrides.push_back("optimizer.grad_clip_norm=" + train["optimizer"]["grad_clip_norm"].dump());

  // Every policy field the recipe can take, from the checkpoint's own config.json.
  const auto recipe_fields = policy::default_policy_config(type);
  for (const auto& [key, fallback] : recipe_fields.items()) {
    if (kNotCarried.count(key) || !policy_config.contains(key) || policy_config[key].is_null()) continue;
    plan.overrides.push_back("policy." + key + "=" + override_value(policy_config[key]));
  }
  if (policy_config.value("use_amp", false))
    plan.warnings.push_back(
        "the LeRobot run used automatic mixed precision (use_amp); pass "
        "accelerator.mixed_precision=bf16 to train in bf16 with lrhost");
  plan.warnings.push_back(
      "LeRobot's Python and NumPy random states and its data order cannot be restored by lrhost "
      "(torch's RNG, weights, optimizer and scheduler are): batches after the resume differ "
      "from what lerobot-train would have drawn");
  plan.overrides.push_back("output_dir=" + step_dir.parent_path().parent_path().string());
  plan.overrides.push_back("resume=true");
  return plan;
}

}  // namespace lrhost::cli
