// Translation between Lua values and JSON (nlohmann::json): configs cross the Lua/C++ border this
// way. Tables with keys 1..n become lists; other tables become objects with string keys; integral
// numbers become JSON integers so that "steps": 5000 round-trips as written.
#pragma once
#include <lua.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace lrhost::bindings {

// Converts the value at `index`; `path` names it in errors (e.g. "config.optimizer").
// Throws LxArgError(arg_index) for values JSON cannot hold (functions, userdata, cycles).
nlohmann::json lx_to_json(lua_State* L, int index, int arg_index, const std::string& path);

void lx_push_json(lua_State* L, const nlohmann::json& value);

// An options table as a JSON object for config::ConfigReader ({} when empty; a list is an error):
// the table at `index`, without its key `skip` when given, for the one value JSON cannot hold (a
// Policy, a Dataset, a list of Tensors) that the caller reads from Lua. Other values convert as
// lx_to_json converts them.
nlohmann::json lx_options(lua_State* L, int index, int arg_index, const std::string& path, const char* skip = nullptr);

// Marks the table at `index` as a map (string keys -> values): it converts to a JSON object even
// when empty. The mark is a shared metatable, so it survives the table being passed around.
void lx_mark_map(lua_State* L, int index);
bool lx_is_map(lua_State* L, int index);

}  // namespace lrhost::bindings
