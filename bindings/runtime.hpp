// The binding runtime (LÖVE style): every native object in Lua is a small typed userdata (a Proxy
// holding a type tag and a shared_ptr), each exposed type has its own metatable, argument checks
// name the argument position, the expected type and the valid values, and C++ exceptions become
// Lua errors only after the C++ frames that threw have been left (lx_guard), so no longjmp ever
// crosses a C++ destructor. Objects can be released deterministically with `obj:release()`.
#pragma once
#include <lua.hpp>

#include <torch/torch.h>
#include <array>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/util/error.hpp"
#include "host/util/name_table.hpp"

namespace lrhost::bindings {

// A native type exposed to Lua. `registry_key` names its metatable in the Lua registry.
struct LxType {
  const char* name;
  const char* registry_key;
};

// Specialise for each exposed C++ type T:  template <> struct LxTraits<T> { static const LxType type; };
template <class T>
struct LxTraits;

// The userdata payload of every native object.
struct Proxy {
  const LxType* type;
  std::shared_ptr<void> object;  // empty after release()
};

// A bad argument: `index` is the Lua stack position; lx_guard turns it into
// "bad argument #<n> to '<function>' (<message>)".
class LxArgError : public std::runtime_error {
 public:
  LxArgError(int index, const std::string& message) : std::runtime_error(message), index_(index) {}
  int index() const { return index_; }

 private:
  int index_;
};

// Creates the metatable of a type. `methods` become the `__index` table; `properties`, when given,
// is called as properties(self, key) for keys that are not methods (e.g. `t.shape`) and must push
// exactly one value; `metamethods` (e.g. __add, __tostring) are set on the metatable. Every type
// also gets `release()`, `is_released()` and `type()`.
void lx_register_type(lua_State* L, const LxType& type, const luaL_Reg* methods, lua_CFunction properties = nullptr,
                      const luaL_Reg* metamethods = nullptr);

// Sets each function of `functions` (nullptr-terminated) as a field of the table at `table`.
void lx_set_functions(lua_State* L, int table, const luaL_Reg* functions);

// The Proxy at `index` if it is a native object of `type` (released or not), else nullptr.
Proxy* lx_to_proxy(lua_State* L, int index, const LxType& type);

// Type name for messages: the native type name for our objects, Lua's type name otherwise.
std::string lx_typename(lua_State* L, int index);

template <class T>
void lx_push(lua_State* L, std::shared_ptr<T> object) {
  void* memory = lua_newuserdata(L, sizeof(Proxy));
  new (memory) Proxy{&LxTraits<T>::type, std::static_pointer_cast<void>(std::move(object))};
  luaL_getmetatable(L, LxTraits<T>::type.registry_key);
  lua_setmetatable(L, -2);
}

template <class T>
std::shared_ptr<T> lx_check_shared(lua_State* L, int index) {
  const LxType& type = LxTraits<T>::type;
  Proxy* proxy = lx_to_proxy(L, index, type);
  if (proxy == nullptr)
    throw LxArgError(index, std::string("expected ") + type.name + ", got " + lx_typename(L, index));
  if (!proxy->object)
    throw LxArgError(index, std::string(type.name) + " was released; it cannot be used after :release()");
  return std::static_pointer_cast<T>(proxy->object);
}

template <class T>
T& lx_check(lua_State* L, int index) {
  return *lx_check_shared<T>(L, index);
}

template <class T>
bool lx_is(lua_State* L, int index) {
  Proxy* proxy = lx_to_proxy(L, index, LxTraits<T>::type);
  return proxy != nullptr && proxy->object != nullptr;
}

// Argument checks; all throw LxArgError.
double lx_check_number(lua_State* L, int index);
int64_t lx_check_integer(lua_State* L, int index);
std::string lx_check_string(lua_State* L, int index);
bool lx_check_boolean(lua_State* L, int index);
void lx_check_table(lua_State* L, int index, const char* what = "table");
void lx_check_function(lua_State* L, int index);
std::optional<double> lx_opt_number(lua_State* L, int index);
std::optional<int64_t> lx_opt_integer(lua_State* L, int index);
std::optional<std::string> lx_opt_string(lua_State* L, int index);
std::optional<bool> lx_opt_boolean(lua_State* L, int index);
// A string that must be one of `valid`.
std::string lx_check_enum(lua_State* L, int index, const std::vector<std::string>& valid);
// The enum value named by the string at `index`, with the table's names in the error.
template <class Enum, std::size_t N>
Enum lx_check_enum(lua_State* L, int index, const util::NameTable<Enum, N>& names) {
  const char* text = lua_type(L, index) == LUA_TSTRING ? lua_tostring(L, index) : nullptr;
  if (text)
    if (auto value = names.find(text)) return *value;
  throw LxArgError(index, "expected one of " + names.choices() + ", got " +
                              (text ? "'" + std::string(text) + "'" : lx_typename(L, index)));
}
// The one reader of a Lua options table: calls `read(key, value_index)` for each entry of the table
// at `index` (option names are strings); `read` checks the value at value_index and throws
// LxArgError(index, ...) for an unknown key. An LxArgError about the value itself comes back naming
// the option ("policy: expected Policy, got Optimizer"), not its temporary stack slot.
template <class Read>
void lx_for_each_option(lua_State* L, int index, Read&& read) {
  if (index < 0) index = lua_gettop(L) + index + 1;
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    const int value = lua_gettop(L);
    if (lua_type(L, -2) != LUA_TSTRING)
      throw LxArgError(index, "option names must be strings, got " + lx_typename(L, -2));
    const std::string key = lua_tostring(L, -2);
    try {
      read(key, value);
    } catch (const LxArgError& error) {
      throw LxArgError(index, error.index() == index ? error.what() : key + ": " + error.what());
    }
    lua_settop(L, value - 1);  // keeps the key for lua_next
  }
}
// One row of an options table's readers: the option's name and what stores its value (at
// value_index) into the target. A table of rows is the whole list of valid options.
template <class Target>
struct LxOptionRow {
  const char* key;
  void (*read)(lua_State* L, int value_index, Target& target);
};
// Reads the options table at `index` into `target` through `rows`; an unknown key is an error that
// lists the rows' names.
template <class Target, std::size_t N>
void lx_read_options(lua_State* L, int index, const std::array<LxOptionRow<Target>, N>& rows, Target& target) {
  lx_for_each_option(L, index, [&](const std::string& key, int value) {
    for (const auto& row : rows)
      if (key == row.key) return row.read(L, value, target);
    std::string valid;
    for (const auto& row : rows) valid += std::string(valid.empty() ? "" : ", ") + row.key;
    throw LxArgError(index, "unknown option '" + key + "' (valid: " + valid + ")");
  });
}
// Field `key` of the table at `index` (nil when absent), pushed on the stack; returns its Lua type.
int lx_get_field(lua_State* L, int index, const char* key);

// Builds the Lua error for an exception caught by lx_guard and leaves it on the stack.
void lx_push_error(lua_State* L, const char* function, const std::exception& error);

// Runs a binding body; a thrown exception becomes a Lua error raised after the catch block ends.
template <class F>
int lx_guard(lua_State* L, const char* function, F&& body) {
  try {
    return body();
  } catch (const std::exception& error) {
    lx_push_error(L, function, error);
  }
  return lua_error(L);
}

}  // namespace lrhost::bindings
