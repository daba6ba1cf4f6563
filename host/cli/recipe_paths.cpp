// Locating the shipped recipes; see recipe_paths.hpp. The source path is known to this one file
// only (CMakeLists.txt): as a flag of every file it would make ccache miss for every clone.
#include "host/cli/recipe_paths.hpp"

#include <cstdlib>

namespace lrhost::cli {

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

std::filesystem::path shipped_recipes_dir() { return recipes_lib_dir().parent_path(); }

}  // namespace lrhost::cli
