// Builds the `lrhost` module table: native parts from every wrap_*.cpp, then the embedded Lua
// helpers, each called with the module table so it can add functions written in Lua.
#include "bindings/module.hpp"

#include <string>

#include "bindings/embedded_lua.hpp"

namespace lrhost::bindings {

int luaopen_lrhost(lua_State* L) {
  lua_newtable(L);
  int module = lua_gettop(L);
  open_lrhost_functions(L, module);
  open_config(L, module);
  open_tensor(L, module);
  open_policy(L, module);
  open_optimizer(L, module);
  open_scheduler(L, module);
  open_ema(L, module);
  open_accelerator(L, module);
  open_dataset(L, module);
  open_loader(L, module);
  open_metrics(L, module);
  open_env(L, module);
  for (const EmbeddedLua* file = embedded_lua_files; file->name != nullptr; ++file) {
    std::string chunk_name = std::string("=[lrhost]/") + file->name + ".lua";
    if (luaL_loadbuffer(L, file->source, file->size, chunk_name.c_str()) != 0) return lua_error(L);
    lua_pushvalue(L, module);
    lua_call(L, 1, 0);
  }
  lua_settop(L, module);
  return 1;
}

}  // namespace lrhost::bindings
