// Registration of the checkpoint binding (lr.checkpoint, lr.save_safetensors, lr.load_safetensors).
#pragma once
#include <lua.hpp>

namespace lrhost::bindings {

void open_checkpoint(lua_State* L, int module);  // wrap_checkpoint.cpp

}  // namespace lrhost::bindings
