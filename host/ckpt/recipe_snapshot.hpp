// The code that produced a run, frozen once per run: the recipe file, every Lua module it loaded
// from files (its sibling modules, recipes/lib, LRHOST_PATH) and the command-line overrides. Taken
// in memory when the run's checkpoint manager is created, so later edits to the files, or
// keep_last deleting the checkpoint a resumed run started from, cannot change what is saved; every
// checkpoint then carries a copy in pretrained_model/ (train_recipe.lua, train_modules/,
// train_launch.json), so any complete checkpoint resumes with the code that wrote it.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::ckpt {

inline constexpr const char* kRecipeCopyFile = "train_recipe.lua";
inline constexpr const char* kModulesDir = "train_modules";
inline constexpr const char* kLaunchFile = "train_launch.json";

struct LoadedModule {
  std::string name;            // as given to require: "policy_training", "team.scaling"
  std::filesystem::path file;  // where it was found
};

struct RecipeSnapshot {
  std::string recipe_path;  // as the user started the run; a resumed run keeps its original's (informational)
  std::string recipe_text;
  std::vector<std::pair<std::string, std::string>> modules;  // path under train_modules/ -> text
  std::vector<std::string> overrides;
};

// Reads the recipe and module files now. A module's path under train_modules/ follows Lua's search
// rule for its name ("team.scaling" -> team/scaling.lua, or team/scaling/init.lua when it was
// found as an init.lua), so putting train_modules/ first on the search path finds the same code.
// IoError naming a file that cannot be read.
RecipeSnapshot take_recipe_snapshot(const std::filesystem::path& recipe, const std::vector<LoadedModule>& modules,
                                    std::vector<std::string> overrides);

// Writes train_recipe.lua, train_modules/... and train_launch.json into `pretrained_dir`.
void write_recipe_snapshot(const RecipeSnapshot& snapshot, const std::filesystem::path& pretrained_dir);

// The files train_launch.json in `pretrained_dir` says belong to the snapshot and are missing
// (relative to pretrained_dir); empty when there is no train_launch.json (a checkpoint written
// without a recipe, e.g. by LeRobot) or nothing is missing.
std::vector<std::string> missing_snapshot_files(const std::filesystem::path& pretrained_dir);

}  // namespace lrhost::ckpt
