// The recipe engine: one LuaJIT state per run. Sets the module search path (module_search.hpp: the
// recipe's folder, recipes/lib, every folder of LRHOST_PATH), preloads `lrhost`, runs the recipe
// under a traceback handler, and turns any Lua error into one printed message with file:line and a non-zero exit (and
// into the error file a launched rank leaves for its launcher).
#include <lua.hpp>  // LuaJIT's lua.hpp also declares luajit.h, all with C linkage

#include <cstdio>
#include <filesystem>
#include <memory>

#include "bindings/engine_context.hpp"
#include "bindings/module.hpp"
#include "bindings/module_search.hpp"
#include "bindings/runtime.hpp"
#include "host/cli/recipe_request.hpp"
#include "host/launch/error_file.hpp"
#include "host/util/save_on_signal.hpp"

namespace lrhost::bindings {

struct LuaStateCloser {
  void operator()(lua_State* L) const { lua_close(L); }
};

namespace {

const char kContextKey = 0;  // its address keys the EngineContext in the registry
const char kShowFinished = 0;
const char kPreempted = 0;

int message_handler(lua_State* L) {
  if (lua_touserdata(L, 1) == &kShowFinished || lua_touserdata(L, 1) == &kPreempted) return 1;
  if (!lua_isstring(L, 1)) {
    lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    lua_replace(L, 1);
  }
  lua_getglobal(L, "debug");
  lua_getfield(L, -1, "traceback");
  lua_pushvalue(L, 1);
  lua_pushinteger(L, 2);
  lua_call(L, 2, 1);
  return 1;
}

// Every way a recipe fails ends here: the message goes to stderr and, in a launched rank, to the
// error file the launcher reads for its failure report.
void print_error(const char* text) {
  std::fprintf(stderr, "lrhost: error: %s\n", text);
  std::fflush(stderr);
  launch::record_error_for_launcher(text != nullptr ? text : "(no error message)");
}

}  // namespace

void set_engine_context(lua_State* L, EngineContext* context) {
  lua_pushlightuserdata(L, const_cast<char*>(&kContextKey));
  lua_pushlightuserdata(L, context);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

EngineContext& engine_context(lua_State* L) {
  lua_pushlightuserdata(L, const_cast<char*>(&kContextKey));
  lua_rawget(L, LUA_REGISTRYINDEX);
  auto* context = static_cast<EngineContext*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  if (context == nullptr) throw std::logic_error("lrhost module used outside the lrhost engine");
  return *context;
}

std::vector<ckpt::LoadedModule> loaded_file_modules(lua_State* L) {
  std::vector<ckpt::LoadedModule> modules;
  int top = lua_gettop(L);
  lua_getglobal(L, "package");
  int package = lua_gettop(L);
  lua_getfield(L, package, "loaded");
  int loaded = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, loaded) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    std::string name = lua_tostring(L, -1);
    lua_getfield(L, package, "preload");
    lua_getfield(L, -1, name.c_str());
    bool embedded = !lua_isnil(L, -1);
    lua_pop(L, 2);
    if (embedded) continue;
    // Lua's own rule for where require found it: package.searchpath(name, package.path).
    lua_getfield(L, package, "searchpath");
    lua_pushstring(L, name.c_str());
    lua_getfield(L, package, "path");
    lua_call(L, 2, 1);
    if (lua_isstring(L, -1)) modules.push_back({name, lua_tostring(L, -1)});
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  return modules;
}

void* show_finished_marker() {
  return const_cast<char*>(&kShowFinished);
}
void* preempted_marker() {
  return const_cast<char*>(&kPreempted);
}

void ensure_not_show_mode(lua_State* L, const char* what) {
  if (engine_context(L).request.mode == cli::RecipeMode::show)
    throw util::ConfigError(
        std::string("`lrhost show` stops at lr.config, but this recipe calls ") + what + " before lr.config",
        "call lr.config first in the recipe");
}

}  // namespace lrhost::bindings

namespace lrhost::cli {

std::string recipe_engine_version() {
  // GC64 matters: without it LuaJIT can only use the low 2 GiB of address space, which a process
  // holding LibTorch exhausts. Ask the library itself rather than assuming from the platform.
  std::unique_ptr<lua_State, bindings::LuaStateCloser> state(luaL_newstate());
  std::string text = LUAJIT_VERSION;
  if (state) {
    luaL_openlibs(state.get());
    bool gc64 =
        luaL_dostring(state.get(), "return require('ffi').abi('gc64')") == 0 && lua_toboolean(state.get(), -1) != 0;
    text += gc64 ? " (GC64)" : " (not GC64: memory for Lua objects is limited to 2 GiB)";
  }
  return text;
}

int run_recipe(const RecipeRequest& request) {
  using namespace lrhost::bindings;
  std::unique_ptr<lua_State, bindings::LuaStateCloser> state(luaL_newstate());
  lua_State* L = state.get();
  if (L == nullptr) {
    print_error("could not create a Lua state (out of memory)");
    return 1;
  }
  luaL_openlibs(L);
  EngineContext context{request, std::nullopt};
  set_engine_context(L, &context);

  install_module_search(L, request.recipe_path);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_lrhost);
  lua_setfield(L, -2, "lrhost");
  lua_pop(L, 2);

  lua_createtable(L, 0, 1);  // arg[0] = recipe path, as the standalone interpreter does
  lua_pushstring(L, request.recipe_path.c_str());
  lua_rawseti(L, -2, 0);
  lua_setglobal(L, "arg");

  lua_pushcfunction(L, message_handler);
  int handler = lua_gettop(L);
  if (luaL_loadfile(L, request.recipe_path.c_str()) != 0) {
    print_error(lua_tostring(L, -1));
    return 1;
  }
  if (lua_pcall(L, 0, 0, handler) != 0) {
    if (lua_touserdata(L, -1) == show_finished_marker()) return 0;
    if (lua_touserdata(L, -1) == preempted_marker()) return util::kPreemptedExitCode;
    print_error(lua_tostring(L, -1));
    return 1;
  }
  if (request.mode == RecipeMode::show) {
    print_error("the recipe finished without calling lr.config, so there is no config to show");
    return 1;
  }
  if (!request.overrides.empty() && !context.resolved_config) {
    print_error("overrides were given but the recipe never called lr.config, so they were not applied");
    return 1;
  }
  return 0;
}

}  // namespace lrhost::cli
