// Implementation of the binding runtime: metatables, type checks, argument checks, error shim.
#include "bindings/runtime.hpp"

#include <cmath>
#include <cstring>

#include "host/util/strings.hpp"

namespace lrhost::bindings {

namespace {

int proxy_gc(lua_State* L) {
  auto* proxy = static_cast<Proxy*>(lua_touserdata(L, 1));
  if (proxy != nullptr) proxy->~Proxy();
  return 0;
}

Proxy* any_proxy(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TUSERDATA || !lua_getmetatable(L, index)) return nullptr;
  lua_getfield(L, -1, "__lrhost_type");
  bool ours = lua_islightuserdata(L, -1);
  lua_pop(L, 2);
  return ours ? static_cast<Proxy*>(lua_touserdata(L, index)) : nullptr;
}

int proxy_release(lua_State* L) {
  Proxy* proxy = any_proxy(L, 1);
  if (proxy == nullptr) return luaL_argerror(L, 1, "expected a native lrhost object");
  proxy->object.reset();
  return 0;
}

int proxy_is_released(lua_State* L) {
  Proxy* proxy = any_proxy(L, 1);
  if (proxy == nullptr) return luaL_argerror(L, 1, "expected a native lrhost object");
  lua_pushboolean(L, !proxy->object);
  return 1;
}

int proxy_type(lua_State* L) {
  Proxy* proxy = any_proxy(L, 1);
  if (proxy == nullptr) return luaL_argerror(L, 1, "expected a native lrhost object");
  lua_pushstring(L, proxy->type->name);
  return 1;
}

int proxy_tostring(lua_State* L) {
  Proxy* proxy = any_proxy(L, 1);
  if (proxy == nullptr) return luaL_argerror(L, 1, "expected a native lrhost object");
  lua_pushfstring(L, proxy->object ? "%s: %p" : "%s (released): %p", proxy->type->name, lua_topointer(L, 1));
  return 1;
}

// __index with properties: upvalue 1 = methods table, upvalue 2 = properties function.
int index_with_properties(lua_State* L) {
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 1);
  return 1;
}

[[noreturn]] void type_error(lua_State* L, int index, const char* expected) {
  throw LxArgError(index, std::string("expected ") + expected + ", got " + lx_typename(L, index));
}

}  // namespace

void lx_register_type(lua_State* L, const LxType& type, const luaL_Reg* methods, lua_CFunction properties,
                      const luaL_Reg* metamethods) {
  luaL_newmetatable(L, type.registry_key);
  lua_pushlightuserdata(L, const_cast<LxType*>(&type));
  lua_setfield(L, -2, "__lrhost_type");
  lua_pushstring(L, type.name);
  lua_setfield(L, -2, "__name");
  lua_pushcfunction(L, proxy_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, proxy_tostring);
  lua_setfield(L, -2, "__tostring");
  if (metamethods != nullptr) luaL_register(L, nullptr, metamethods);

  lua_newtable(L);  // methods
  const luaL_Reg common[] = {
      {"release", proxy_release}, {"is_released", proxy_is_released}, {"type", proxy_type}, {nullptr, nullptr}};
  luaL_register(L, nullptr, common);
  if (methods != nullptr) luaL_register(L, nullptr, methods);
  if (properties != nullptr) {
    lua_pushcfunction(L, properties);
    lua_pushcclosure(L, index_with_properties, 2);
  }
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

void lx_set_functions(lua_State* L, int table, const luaL_Reg* functions) {
  for (; functions->name != nullptr; ++functions) {
    lua_pushcfunction(L, functions->func);
    lua_setfield(L, table, functions->name);
  }
}

Proxy* lx_to_proxy(lua_State* L, int index, const LxType& type) {
  Proxy* proxy = any_proxy(L, index);
  return proxy != nullptr && proxy->type == &type ? proxy : nullptr;
}

std::string lx_typename(lua_State* L, int index) {
  if (Proxy* proxy = any_proxy(L, index)) return proxy->type->name;
  return lua_typename(L, lua_type(L, index));
}

double lx_check_number(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TNUMBER) type_error(L, index, "number");
  return lua_tonumber(L, index);
}

int64_t lx_check_integer(lua_State* L, int index) {
  double value = lx_check_number(L, index);
  if (std::floor(value) != value || std::fabs(value) > 9.0e15)
    throw LxArgError(index, "expected integer, got " + std::to_string(value));
  return static_cast<int64_t>(value);
}

std::string lx_check_string(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TSTRING) type_error(L, index, "string");
  std::size_t length = 0;
  const char* text = lua_tolstring(L, index, &length);
  return std::string(text, length);
}

bool lx_check_boolean(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TBOOLEAN) type_error(L, index, "boolean");
  return lua_toboolean(L, index) != 0;
}

void lx_check_table(lua_State* L, int index, const char* what) {
  if (lua_type(L, index) != LUA_TTABLE) type_error(L, index, what);
}

void lx_check_function(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TFUNCTION) type_error(L, index, "function");
}

std::optional<double> lx_opt_number(lua_State* L, int index) {
  if (lua_isnoneornil(L, index)) return std::nullopt;
  return lx_check_number(L, index);
}

std::optional<int64_t> lx_opt_integer(lua_State* L, int index) {
  if (lua_isnoneornil(L, index)) return std::nullopt;
  return lx_check_integer(L, index);
}

std::optional<std::string> lx_opt_string(lua_State* L, int index) {
  if (lua_isnoneornil(L, index)) return std::nullopt;
  return lx_check_string(L, index);
}

std::optional<bool> lx_opt_boolean(lua_State* L, int index) {
  if (lua_isnoneornil(L, index)) return std::nullopt;
  return lx_check_boolean(L, index);
}

std::string lx_check_enum(lua_State* L, int index, const std::vector<std::string>& valid) {
  if (lua_type(L, index) != LUA_TSTRING)
    throw LxArgError(index, "expected one of " + util::quoted_list(valid) + ", got " + lx_typename(L, index));
  std::string value = lua_tostring(L, index);
  for (const auto& option : valid)
    if (option == value) return value;
  throw LxArgError(index, "expected one of " + util::quoted_list(valid) + ", got '" + value + "'");
}

int lx_get_field(lua_State* L, int index, const char* key) {
  lua_getfield(L, index, key);
  return lua_type(L, -1);
}

void lx_push_error(lua_State* L, const char* function, const std::exception& error) {
  std::string message;
  bool method = std::strchr(function, ':') != nullptr;
  if (const auto* arg = dynamic_cast<const LxArgError*>(&error)) {
    int position = method ? arg->index() - 1 : arg->index();
    message = position == 0
                  ? std::string("bad self to '") + function + "' (" + arg->what() + ")"
                  : "bad argument #" + std::to_string(position) + " to '" + function + "' (" + arg->what() + ")";
  } else if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) {
    // LibTorch messages carry a C++ backtrace that means nothing to a recipe author.
    message = std::string(function) + ": " + torch_error->what_without_backtrace();
  } else {
    message = std::string(function) + ": " + util::describe(error);
  }
  luaL_where(L, 1);  // the recipe's file:line that called us
  lua_pushlstring(L, message.data(), message.size());
  lua_concat(L, 2);
}

}  // namespace lrhost::bindings
