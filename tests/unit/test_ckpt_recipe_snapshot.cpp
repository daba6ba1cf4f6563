// Recipe snapshots (host/ckpt/recipe_snapshot.*): what a checkpoint keeps of the code that wrote it,
// where each module lands under train_modules/, and when a checkpoint counts as incomplete.
#include <doctest/doctest.h>

#include <fstream>

#include "host/ckpt/checkpoint_manager.hpp"
#include "host/ckpt/recipe_snapshot.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::write_text;

namespace fs = std::filesystem;
namespace ckpt = lrhost::ckpt;
using lrhost::test::TempDir;

namespace {}  // namespace

TEST_CASE("recipe snapshot: taken once, written with its modules, checked for completeness") {
  TempDir dir("snapshot");
  write_text(dir / "src/train.lua", "require 'helper'\n");
  write_text(dir / "src/helper.lua", "return {v = 1}\n");
  write_text(dir / "team/robots/scaling.lua", "return {}\n");
  write_text(dir / "team/robots/init.lua", "return {pkg = true}\n");
  auto snapshot = ckpt::take_recipe_snapshot(dir / "src/train.lua",
                                             {{"helper", dir / "src/helper.lua"},
                                              {"robots.scaling", dir / "team/robots/scaling.lua"},
                                              {"robots", dir / "team/robots/init.lua"}},
                                             {"steps=5", "policy.dim_model=64"});
  // Later edits do not reach the snapshot: it was read when taken.
  write_text(dir / "src/helper.lua", "return {v = 2}\n");
  const fs::path pretrained = dir / "ckpt/pretrained_model";
  fs::create_directories(pretrained);
  ckpt::write_recipe_snapshot(snapshot, pretrained);
  CHECK(lrhost::io::read_text_file(pretrained / ckpt::kRecipeCopyFile) == "require 'helper'\n");
  CHECK(lrhost::io::read_text_file(pretrained / "train_modules/helper.lua") == "return {v = 1}\n");
  CHECK(fs::exists(pretrained / "train_modules/robots/scaling.lua"));  // module path from its name
  CHECK(fs::exists(pretrained / "train_modules/robots/init.lua"));     // found as init.lua, kept so
  auto launch = lrhost::io::read_json_file(pretrained / ckpt::kLaunchFile, "");
  CHECK(launch["overrides"] == nlohmann::ordered_json({"steps=5", "policy.dim_model=64"}));
  CHECK(launch["recipe_copy"] == ckpt::kRecipeCopyFile);
  CHECK(launch["modules"].size() == 3);
  CHECK(ckpt::missing_snapshot_files(pretrained).empty());

  fs::remove(pretrained / "train_modules/robots/scaling.lua");
  auto missing = ckpt::missing_snapshot_files(pretrained);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0] == "train_modules/robots/scaling.lua");
  // A folder without train_launch.json (LeRobot's, or written without a recipe) has no snapshot to miss.
  CHECK(ckpt::missing_snapshot_files(dir / "src").empty());
  // A module file that cannot be read is an error naming it, never a silently partial snapshot.
  CHECK_THROWS_AS(ckpt::take_recipe_snapshot(dir / "src/train.lua", {{"gone", dir / "src/gone.lua"}}, {}),
                  lrhost::util::IoError);
}

TEST_CASE("checkpoint damage: truncated safetensors and broken JSON are named") {
  TempDir dir("damage");
  write_text(dir / "pretrained_model/config.json", "{\"type\": \"mlp\"}");
  CHECK_FALSE(ckpt::checkpoint_damage(dir.path));
  write_text(dir / "training_state/training_step.json", "{\"step\": ");
  auto damage = ckpt::checkpoint_damage(dir.path);
  REQUIRE(damage);
  CHECK(damage->find("training_step.json") != std::string::npos);
  fs::remove(dir / "training_state/training_step.json");
  write_text(dir / "pretrained_model/model.safetensors", std::string("\x40\x00\x00\x00\x00\x00\x00\x00{", 9));
  damage = ckpt::checkpoint_damage(dir.path);
  REQUIRE(damage);
  CHECK(damage->find("model.safetensors") != std::string::npos);
}
