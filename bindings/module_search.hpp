// Where a recipe's `require` looks for Lua modules: a resumed run's saved train_modules/ (first), the
// recipe's folder, the shipped recipes/lib, and every folder of LRHOST_PATH. A module found in none
// of them fails with Lua's list of tried files followed by these folders by name and how to add one,
// since a user who sees only "module 'x' not found" does not know LRHOST_PATH exists.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

struct lua_State;

namespace lrhost::bindings {

// The folders, in search order, each with what it is ("the recipe's folder", "LRHOST_PATH", ...).
std::vector<std::pair<std::string, std::filesystem::path>> module_folders(const std::filesystem::path& recipe);

// Sets package.path to those folders and appends the loader that explains a module found nowhere.
void install_module_search(lua_State* L, const std::filesystem::path& recipe);

}  // namespace lrhost::bindings
