// The recipe engine's module search path and its explanation of a missing module; see
// module_search.hpp.
#include "bindings/module_search.hpp"

#include <lua.hpp>

#include <cstdlib>
#include <sstream>

#include "host/util/shipped_paths.hpp"

namespace lrhost::bindings {
namespace fs = std::filesystem;

namespace {

// The last entry of package.loaders: finds nothing, and returns the text that LuaJIT's `require`
// appends to its "module 'x' not found:" message (one string per loader that failed).
int explain_missing_module(lua_State* L) {
  const char* name = luaL_checkstring(L, 1);
  std::string file = name;
  for (char& c : file)
    if (c == '.') c = '/';
  lua_pushfstring(L,
                  "%s\n\thint: put %s.lua in one of these folders, or add the folder holding it to LRHOST_PATH "
                  "(folders separated by ':')",
                  lua_tostring(L, lua_upvalueindex(1)), file.c_str());
  return 1;
}

}  // namespace

std::vector<std::pair<std::string, fs::path>> module_folders(const fs::path& recipe) {
  std::vector<std::pair<std::string, fs::path>> folders;
  // `lrhost resume` runs a checkpoint's recipe copy with the modules saved beside it, first.
  if (const char* saved = std::getenv("LRHOST_RECIPE_MODULES"); saved != nullptr && *saved != 0)
    folders.emplace_back("the resumed checkpoint's modules", saved);
  folders.emplace_back("the recipe's folder", fs::absolute(recipe).parent_path());
  folders.emplace_back("lrhost's recipes/lib", util::recipes_lib_dir());
  if (const char* team = std::getenv("LRHOST_PATH")) {
    std::stringstream list(team);
    for (std::string dir; std::getline(list, dir, ':');)
      if (!dir.empty()) folders.emplace_back("LRHOST_PATH", dir);
  }
  return folders;
}

void install_module_search(lua_State* L, const fs::path& recipe) {
  const auto folders = module_folders(recipe);
  std::string path;
  std::string explanation = "\n\tlrhost searches these folders (each for NAME.lua and NAME/init.lua):";
  bool team = false;
  for (const auto& [what, dir] : folders) {
    path += dir.string() + "/?.lua;" + dir.string() + "/?/init.lua;";
    explanation += "\n\t  " + dir.string() + "  (" + what + ")";
    team = team || what == "LRHOST_PATH";
  }
  if (!team) explanation += "\n\t  LRHOST_PATH is not set: no team folders";

  lua_getglobal(L, "package");
  lua_pushstring(L, path.c_str());
  lua_setfield(L, -2, "path");
  lua_getfield(L, -1, "loaders");  // LuaJIT (Lua 5.1) name of package.searchers
  const auto count = static_cast<int>(lua_objlen(L, -1));
  lua_pushstring(L, explanation.c_str());
  lua_pushcclosure(L, explain_missing_module, 1);
  lua_rawseti(L, -2, count + 1);
  lua_pop(L, 2);
}

}  // namespace lrhost::bindings
