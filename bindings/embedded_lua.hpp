// The Lua-side parts of the `lrhost` module (bindings/lua/*.lua), compiled into the binary by
// cmake/embed_lua.cmake so a recipe never depends on files next to the executable.
#pragma once
#include <cstddef>

namespace lrhost::bindings {

struct EmbeddedLua {
  const char* name;  // file name without .lua
  const char* source;
  std::size_t size;
};

// Terminated by an entry with name == nullptr.
extern const EmbeddedLua embedded_lua_files[];

}  // namespace lrhost::bindings
