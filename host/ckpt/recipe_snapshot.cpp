// Taking, writing and checking recipe snapshots; see recipe_snapshot.hpp.
#include "host/ckpt/recipe_snapshot.hpp"

#include <algorithm>
#include <system_error>

#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {
namespace fs = std::filesystem;

namespace {

std::string module_path(const LoadedModule& module) {
  std::string path = module.name;
  std::replace(path.begin(), path.end(), '.', '/');
  return path + (module.file.filename() == "init.lua" ? "/init.lua" : ".lua");
}

}  // namespace

RecipeSnapshot take_recipe_snapshot(const fs::path& recipe, const std::vector<LoadedModule>& modules,
                                    std::vector<std::string> overrides) {
  RecipeSnapshot snapshot;
  snapshot.recipe_path = recipe.string();
  // `lrhost resume` runs a checkpoint's copy; its train_launch.json names the file the user ran,
  // which every later checkpoint keeps naming (the copy's folder may be gone to keep_last).
  std::error_code ec;
  if (recipe.filename() == kRecipeCopyFile && fs::is_regular_file(recipe.parent_path() / kLaunchFile, ec)) {
    try {
      auto launch = io::read_json_file(recipe.parent_path() / kLaunchFile, "");
      if (launch.contains("recipe") && launch["recipe"].is_string() && !launch["recipe"].get<std::string>().empty())
        snapshot.recipe_path = launch["recipe"].get<std::string>();
    } catch (const util::Error&) {
      // An unreadable record only costs the name: the copy's own path stays.
    }
  }
  snapshot.recipe_text = io::read_text_file(recipe);
  for (const auto& module : modules)
    snapshot.modules.emplace_back(module_path(module), io::read_text_file(module.file));
  std::sort(snapshot.modules.begin(), snapshot.modules.end());
  snapshot.overrides = std::move(overrides);
  return snapshot;
}

void write_recipe_snapshot(const RecipeSnapshot& snapshot, const fs::path& pretrained_dir) {
  io::write_file_atomic(pretrained_dir / kRecipeCopyFile, snapshot.recipe_text);
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  for (const auto& [path, text] : snapshot.modules) {
    const fs::path file = pretrained_dir / kModulesDir / path;
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec) throw util::IoError("cannot create " + file.parent_path().string() + ": " + ec.message());
    io::write_file_atomic(file, text);
    modules.push_back(path);
  }
  nlohmann::ordered_json launch;
  launch["recipe"] = snapshot.recipe_path;
  launch["overrides"] = snapshot.overrides;
  launch["recipe_copy"] = kRecipeCopyFile;
  launch["modules"] = modules;
  io::write_file_atomic(pretrained_dir / kLaunchFile, launch.dump(4));
}

std::vector<std::string> missing_snapshot_files(const fs::path& pretrained_dir) {
  std::error_code ec;
  if (!fs::exists(pretrained_dir / kLaunchFile, ec)) return {};
  std::vector<std::string> missing;
  nlohmann::ordered_json launch;
  try {
    launch = io::read_json_file(pretrained_dir / kLaunchFile, "");
  } catch (const util::Error&) {
    return {kLaunchFile};  // unreadable: the snapshot cannot be trusted
  }
  auto expect = [&](const std::string& relative) {
    if (!fs::is_regular_file(pretrained_dir / relative, ec)) missing.push_back(relative);
  };
  if (launch.contains("recipe_copy") && launch["recipe_copy"].is_string())
    expect(launch["recipe_copy"].get<std::string>());
  if (launch.contains("modules") && launch["modules"].is_array())
    for (const auto& path : launch["modules"])
      if (path.is_string()) expect(std::string(kModulesDir) + "/" + path.get<std::string>());
  return missing;
}

}  // namespace lrhost::ckpt
