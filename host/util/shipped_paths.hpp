// Where lrhost's shipped files are: the recipes folder of an installed lrhost
// (<exe>/../share/lrhost/recipes), else of the source tree this binary was built from;
// $LRHOST_RECIPES_LIB overrides the library folder. The recipe engine searches the library, `lrhost
// resume` of a LeRobot run and `lrhost lerobot-train` pick the shipped recipe of a policy type, and
// models named "lrhost/<name>" (the tiny SmolVLA VLM) resolve to recipes/assets/<name>, so a config
// that names one holds no path into a clone and keeps working after the clone moves.
#pragma once
#include <filesystem>
#include <string>

namespace lrhost::util {

// The shared recipe library (recipes/lib).
std::filesystem::path recipes_lib_dir();
// The shipped recipes (the parent of recipes_lib_dir()).
std::filesystem::path shipped_recipes_dir();
// The prefix of model names that are shipped assets: "lrhost/smolvla_tiny_vlm".
inline constexpr const char* kShippedAssetPrefix = "lrhost/";
// recipes/assets/<name> for a model name "lrhost/<name>"; empty for any other name.
std::filesystem::path shipped_asset_dir(const std::string& model_name);

}  // namespace lrhost::util
