// The plan of `lrhost resume` (host/cli/checkpoint_command.*, host/cli/lerobot_resume.*): a
// lerobot-train run mapped onto the shipped recipe (which fields become overrides, which are left
// to lrhost, the errors for what cannot be mapped), and a checkpoint that cannot be resumed at all.
// The real round trip through LeRobot's own training script is interop.lerobot_run_resume.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>

#include "host/cli/checkpoint_command.hpp"
#include "host/cli/lerobot_resume.hpp"
#include "host/io/safetensors.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using lrhost::test::TempDir;
using nlohmann::ordered_json;

namespace {

bool has_prefix(const std::vector<std::string>& list, const std::string& prefix) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}

// The fields of LeRobot's TrainPipelineConfig and ACTConfig this mapping reads, as lerobot-train
// writes them (draccus JSON).
ordered_json train_config(const fs::path& root) {
  return ordered_json::parse(R"({
    "dataset": {"repo_id": "local/push", "root": ")" +
                             root.string() + R"(", "episodes": null},
    "policy": {"type": "act"}, "output_dir": "outputs/train/x", "resume": false, "seed": 1000,
    "num_workers": 0, "batch_size": 2, "steps": 2, "log_freq": 1, "save_freq": 2,
    "optimizer": {"type": "adamw", "lr": 1e-05, "grad_clip_norm": 10.0}})");
}

ordered_json act_config() {
  return ordered_json::parse(R"({"type": "act", "n_obs_steps": 1, "device": "cpu", "use_amp": false,
    "push_to_hub": false, "repo_id": null, "chunk_size": 20, "n_action_steps": 20, "dim_model": 64,
    "normalization_mapping": {"VISUAL": "MEAN_STD", "STATE": "MEAN_STD", "ACTION": "MEAN_STD"},
    "pretrained_backbone_weights": null, "optimizer_lr": 1e-05})");
}

}  // namespace

TEST_CASE("lerobot resume: a lerobot-train run maps onto recipes/act_ddp.lua") {
  TempDir dir("lerobot_resume");
  fs::create_directories(dir / "data");
  const fs::path step = dir / "run/checkpoints/000002";
  auto train = train_config(dir / "data");
  CHECK(lrhost::cli::is_lerobot_train_config(train));
  CHECK_FALSE(lrhost::cli::is_lerobot_train_config(ordered_json::parse(R"({"steps": 4, "resume": false})")));

  auto plan = lrhost::cli::plan_lerobot_resume(step, train, act_config());
  CHECK(fs::path(plan.recipe).filename() == "act_ddp.lua");
  CHECK(fs::exists(plan.recipe));
  for (const char* expected :
       {"seed=1000", "steps=2", "batch_size=2", "log_freq=1", "save_freq=2", "optimizer.grad_clip_norm=10.0",
        "policy.chunk_size=20", "policy.dim_model=64", "policy.optimizer_lr=1e-05", "resume=true"})
    CHECK_MESSAGE(lrhost::test::contains(plan.overrides, expected), expected);
  CHECK(lrhost::test::contains(plan.overrides, "dataset.root=" + (dir / "data").string()));
  CHECK(lrhost::test::contains(plan.overrides, "output_dir=" + (dir / "run").string()));
  CHECK(lrhost::test::contains(
      plan.overrides, R"(policy.normalization_mapping={"VISUAL":"MEAN_STD","STATE":"MEAN_STD","ACTION":"MEAN_STD"})"));
  // Not carried: process counts, devices, hub fields, and nulls (the recipe's defaults stand).
  for (const char* absent : {"num_workers=", "policy.device=", "policy.push_to_hub=", "policy.repo_id=",
                             "policy.pretrained_backbone_weights="})
    CHECK_MESSAGE(!has_prefix(plan.overrides, absent), absent);
  CHECK(plan.overrides.back() == "resume=true");
  CHECK(std::any_of(plan.warnings.begin(), plan.warnings.end(),
                    [](const std::string& w) { return w.find("random states") != std::string::npos; }));
}

TEST_CASE("lerobot resume: unmappable runs are errors that say what to do") {
  TempDir dir("lerobot_resume_errors");
  const fs::path step = dir / "run/checkpoints/000002";
  auto train = train_config(dir / "absent");
  auto message = [&](const ordered_json& t, const ordered_json& p) {
    try {
      lrhost::cli::plan_lerobot_resume(step, t, p);
    } catch (const lrhost::util::Error& error) {
      return std::string(error.what()) + " | " + error.hint();
    }
    return std::string("no error");
  };
  CHECK(message(train, act_config()).find("dataset is not on this machine") != std::string::npos);
  CHECK(message(train, act_config()).find("dataset.root=PATH") != std::string::npos);
  auto pi0 = act_config();
  pi0["type"] = "pi0";
  fs::create_directories(dir / "absent");
  CHECK(message(train, pi0).find("'pi0' policy, which has no shipped lrhost recipe") != std::string::npos);
  auto lora = train;
  lora["peft"] = {{"method_type", "LORA"}, {"r", 16}};
  CHECK(message(lora, act_config()).find("resuming a LeRobot LoRA run is not implemented") != std::string::npos);
}

TEST_CASE("resume plan: a checkpoint with neither a recipe snapshot nor LeRobot's config is refused") {
  TempDir dir("resume_plan");
  const fs::path step = dir / "checkpoints/000003";
  auto write = [](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  };
  write(step / "pretrained_model/config.json", R"({"type": "mlp"})");
  write(step / "pretrained_model/train_config.json", R"({"steps": 3, "resume": false})");
  lrhost::io::write_safetensors(step / "pretrained_model/model.safetensors", {{"w", torch::zeros({2})}});
  write(step / "training_state/training_step.json", R"({"step": 3})");
  lrhost::io::write_safetensors(step / "training_state/rng_state.safetensors",
                                {{"torch_rng_state", torch::zeros({4}, torch::kUInt8)}});
  try {
    lrhost::cli::plan_resume(step);
    FAIL("plan_resume accepted a checkpoint without a recipe copy");
  } catch (const lrhost::util::ConfigError& error) {
    CHECK(std::string(error.what()).find("holds no recipe copy") != std::string::npos);
    CHECK(std::string(error.what()).find("not a lerobot-train checkpoint") != std::string::npos);
  }
}
