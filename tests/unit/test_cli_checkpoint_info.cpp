// `lrhost checkpoint info` (host/cli/checkpoint_command.*): the report leads with the fields a user
// reads (policy type, steps, batch, lr, dataset) whatever order the configs keep them in, lists the
// policy config's publishing fields (push_to_hub, license, ...) after the model's own, and names the
// recipe the user ran. Real checkpoints are described in tests/dist (resume.sh, module_resume.sh).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <fstream>
#include <sstream>

#include "host/cli/checkpoint_command.hpp"
#include "host/io/checksum_manifest.hpp"
#include "host/io/safetensors.hpp"
#include "test_support.hpp"

using lrhost::test::write_text;

namespace fs = std::filesystem;
using lrhost::test::TempDir;
using nlohmann::ordered_json;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("checkpoint info: the training summary takes each field from where recipes keep it") {
  // An lrhost recipe's lr.config: ACT keeps its lr in the policy table.
  auto act = ordered_json::parse(R"({"push_to_hub": false, "dataset": {"root": "/data/push"},
    "policy": {"type": "act", "optimizer_lr": 1e-05}, "steps": 100000, "batch_size": 8})");
  CHECK(lrhost::cli::training_summary(act, ordered_json::object()) ==
        "policy act, steps 100000, batch_size 8, lr 1e-05, dataset /data/push");
  // LeRobot's TrainPipelineConfig: optimizer.lr, dataset.repo_id before root.
  auto lerobot = ordered_json::parse(R"({"dataset": {"repo_id": "lerobot/pusht", "root": null},
    "policy": {"type": "diffusion"}, "steps": 2, "batch_size": 64, "optimizer": {"lr": 0.0001}})");
  CHECK(lrhost::cli::training_summary(lerobot, ordered_json::object()) ==
        "policy diffusion, steps 2, batch_size 64, lr 0.0001, dataset lerobot/pusht");
  // A recipe without a policy table or dataset: the type comes from config.json, the empty root
  // (the recipe's default dataset) and the missing fields are left out.
  auto mlp = ordered_json::parse(R"({"steps": 40, "dataset": {"root": ""}, "optimizer": {"lr": 0.003}})");
  CHECK(lrhost::cli::training_summary(mlp, ordered_json::parse(R"({"type": "mlp"})")) ==
        "policy mlp, steps 40, lr 0.003");
}

TEST_CASE("checkpoint info: leads with the training summary and names the recipe the user ran") {
  TempDir dir("checkpoint_info");
  const fs::path step = dir / "checkpoints/000040";
  // config.json as LeRobot orders it: the publishing fields first.
  write_text(step / "pretrained_model/config.json",
             R"({"type": "mlp", "push_to_hub": false, "repo_id": null, "private": null, "license": null,
            "device": "cpu", "use_amp": false, "hidden_dims": [8], "n_obs_steps": 1})");
  write_text(step / "pretrained_model/train_config.json",
             R"({"push_to_hub": false, "license": "apache-2.0", "steps": 40, "batch_size": 4,
            "optimizer": {"lr": 0.003}, "dataset": {"root": "/data/push"}, "resume": false})");
  write_text(step / "pretrained_model/train_launch.json",
             R"({"recipe": "/home/me/recipes/train.lua", "overrides": ["steps=40"], "recipe_copy": "train_recipe.lua",
            "modules": []})");
  write_text(step / "pretrained_model/train_recipe.lua", "-- copy\n");
  lrhost::io::write_safetensors(step / "pretrained_model/model.safetensors", {{"w", torch::zeros({2})}});
  write_text(step / "training_state/training_step.json",
             R"({"step": 40, "dp_world_size": 1, "batch_size": 4, "grad_accum_steps": 1})");

  const std::string text = lrhost::cli::checkpoint_info(step);
  INFO(text);
  const auto training = text.find("  training: policy mlp, steps 40, batch_size 4, lr 0.003, dataset /data/push\n");
  REQUIRE(training != std::string::npos);
  CHECK(training < text.find("  policy: "));  // before the details
  // The model's fields first; LeRobot's publishing fields after them.
  CHECK(has(text, "  config: hidden_dims=[8], n_obs_steps=1, push_to_hub=false"));
  // The train config's own summary keeps its order, publishing fields last too.
  CHECK(has(text, "  train config: steps=40, batch_size=4, resume=false, push_to_hub=false"));
  CHECK(has(text, "  recipe: /home/me/recipes/train.lua steps=40 (copy: pretrained_model/train_recipe.lua)\n"));
}

TEST_CASE("checkpoint verify and info: verified, unverified without a manifest, a mismatch with exit code 1") {
  TempDir dir("checkpoint_verify");
  const fs::path step = dir / "checkpoints/000040";
  write_text(step / "pretrained_model/config.json", R"({"type": "mlp"})");
  lrhost::io::write_safetensors(step / "pretrained_model/model.safetensors", {{"w", torch::arange(100.0)}});
  write_text(step / "training_state/training_step.json", R"({"step": 40, "dp_world_size": 1, "batch_size": 4})");
  lrhost::io::write_safetensors(step / "training_state/rng_state.safetensors",
                                {{"torch_rng_state", torch::zeros({4})}});
  // As LeRobot writes them: no manifest, so unverified, not an error.
  std::ostringstream none;
  CHECK(lrhost::cli::verify_checkpoints(dir.path, none) == 0);
  CHECK(has(none.str(), "unverified (no manifest"));
  CHECK(has(lrhost::cli::checkpoint_info(step), "complete: yes (unverified: no checksums.json)"));
  // lrhost always writes one: an lrhost checkpoint (train_launch.json) without it is damaged, exit code 1.
  write_text(step / "pretrained_model/train_launch.json", "{}");
  std::ostringstream lost;
  CHECK(lrhost::cli::verify_checkpoints(dir.path, lost) == 1);
  CHECK(has(lost.str(), "DAMAGED: its checksums.json is missing, but it is an lrhost checkpoint"));
  CHECK(has(lrhost::cli::checkpoint_info(step), "complete: yes, but damaged: its checksums.json is missing"));
  fs::remove(step / "pretrained_model/train_launch.json");
  // With one: verified (every file but the manifest), and info says so after reading them.
  lrhost::io::write_checksum_manifest(step / "checksums.json",
                                      {"pretrained_model/config.json", "pretrained_model/model.safetensors",
                                       "training_state/rng_state.safetensors", "training_state/training_step.json"});
  std::ostringstream sound;
  CHECK(lrhost::cli::verify_checkpoints(step, sound) == 0);
  CHECK(has(sound.str(), ": verified (4 files, "));
  CHECK(has(lrhost::cli::checkpoint_info(step), "complete: yes, verified (4 files, "));
  // One flipped bit in the tensor data: exit code 1, the file and its byte range.
  const fs::path model = step / "pretrained_model/model.safetensors";
  const auto size = fs::file_size(model);
  {
    std::fstream io(model, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(size - 10));
    io.put('\x7f');
  }
  std::ostringstream bad;
  CHECK(lrhost::cli::verify_checkpoints(dir.path, bad) == 1);
  INFO(bad.str());
  CHECK(has(bad.str(), "DATA DOES NOT MATCH checksums.json"));
  CHECK(has(bad.str(), "  pretrained_model/model.safetensors: bytes 0-" + std::to_string(size - 1) +
                           " data does not match (chunk 0 of 1)"));
  CHECK(has(lrhost::cli::checkpoint_info(step), "but its data does not match checksums.json"));
}
