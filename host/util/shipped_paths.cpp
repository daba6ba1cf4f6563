// Locating the shipped recipes and assets; see shipped_paths.hpp. The source path is known to this
// one file only (CMakeLists.txt): as a flag of every file it would make ccache miss for every clone.
#include "host/util/shipped_paths.hpp"

#include <cstdlib>

namespace lrhost::util {

std::filesystem::path recipes_lib_dir() {
  if (const char* env = std::getenv("LRHOST_RECIPES_LIB")) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = exe.parent_path().parent_path() / "share" / "lrhost" / "recipes" / "lib";
    if (std::filesystem::is_directory(installed, ec)) return installed;
  }
  return std::filesystem::path(LRHOST_SOURCE_DIR) / "recipes" / "lib";
}

std::filesystem::path shipped_recipes_dir() {
  return recipes_lib_dir().parent_path();
}

std::filesystem::path shipped_asset_dir(const std::string& model_name) {
  const std::string prefix = kShippedAssetPrefix;
  if (!model_name.starts_with(prefix) || model_name.size() == prefix.size()) return {};
  const std::string name = model_name.substr(prefix.size());
  if (name.find('/') != std::string::npos || name.find("..") != std::string::npos) return {};
  return shipped_recipes_dir() / "assets" / name;
}

}  // namespace lrhost::util
