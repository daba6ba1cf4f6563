// Where the shipped recipes are: recipes/ of an installed lrhost (<exe>/../share/lrhost/recipes),
// else of the source tree this binary was built from; $LRHOST_RECIPES_LIB overrides the library
// folder. The recipe engine searches the library; `lrhost resume` of a LeRobot run picks the
// shipped recipe of its policy type.
#pragma once
#include <filesystem>

namespace lrhost::cli {

// The shared recipe library (recipes/lib).
std::filesystem::path recipes_lib_dir();
// The shipped recipes (the parent of recipes_lib_dir()).
std::filesystem::path shipped_recipes_dir();

}  // namespace lrhost::cli
