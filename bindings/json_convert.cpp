// Lua <-> JSON conversion for configs.
#include "bindings/json_convert.hpp"

#include <cmath>

#include "bindings/runtime.hpp"

namespace lrhost::bindings {
namespace {

constexpr int kMaxDepth = 64;     // deeper means a cycle in practice
const char kMapMetatableKey = 0;  // its address keys the map marker's metatable in the registry

// Pushes the metatable shared by every table marked as a map.
void push_map_metatable(lua_State* L) {
  lua_pushlightuserdata(L, const_cast<char*>(&kMapMetatableKey));
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_isnil(L, -1)) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "lrhost.config.map");
  lua_setfield(L, -2, "__name");
  lua_pushlightuserdata(L, const_cast<char*>(&kMapMetatableKey));
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

nlohmann::json convert(lua_State* L, int index, int arg_index, const std::string& path, int depth) {
  index = index < 0 ? lua_gettop(L) + index + 1 : index;
  switch (lua_type(L, index)) {
    case LUA_TBOOLEAN:
      return lua_toboolean(L, index) != 0;
    case LUA_TNUMBER: {
      double value = lua_tonumber(L, index);
      if (std::floor(value) == value && std::fabs(value) < 9.0e15) return static_cast<int64_t>(value);
      return value;
    }
    case LUA_TSTRING: {
      std::size_t length = 0;
      const char* text = lua_tolstring(L, index, &length);
      return std::string(text, length);
    }
    case LUA_TTABLE:
      break;
    default:
      throw LxArgError(arg_index, "'" + path + "' is a " + lx_typename(L, index) +
                                      "; config values must be numbers, booleans, strings or tables");
  }
  if (depth > kMaxDepth) throw LxArgError(arg_index, "'" + path + "' nests too deeply (a table that contains itself?)");
  std::size_t length = lua_objlen(L, index);
  std::size_t count = 0;
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    ++count;
    lua_pop(L, 1);
  }
  if (count == length && !(count == 0 && lx_is_map(L, index))) {  // a list 1..n (an unmarked {} too)
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = 1; i <= length; ++i) {
      lua_rawgeti(L, index, static_cast<int>(i));
      list.push_back(convert(L, -1, arg_index, path + "[" + std::to_string(i) + "]", depth + 1));
      lua_pop(L, 1);
    }
    return list;
  }
  nlohmann::json object = nlohmann::json::object();
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      throw LxArgError(arg_index, "'" + path + "' mixes list entries and named keys; use one or the other");
    }
    std::string key = lua_tostring(L, -2);
    object[key] = convert(L, -1, arg_index, path.empty() ? key : path + "." + key, depth + 1);
    lua_pop(L, 1);
  }
  return object;
}

}  // namespace

nlohmann::json lx_options(lua_State* L, int index, int arg_index, const std::string& path, const char* skip) {
  index = index < 0 ? lua_gettop(L) + index + 1 : index;
  lua_newtable(L);
  const int copy = lua_gettop(L);
  lx_mark_map(L, copy);
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (skip && lua_type(L, -2) == LUA_TSTRING && std::string(lua_tostring(L, -2)) == skip) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, copy);
  }
  nlohmann::json options = convert(L, copy, arg_index, path, 0);
  lua_pop(L, 1);
  if (!options.is_object())
    throw LxArgError(arg_index, "'" + path + "' must be a table of named options {key = value, ...}, got a list");
  return options;
}

nlohmann::json lx_to_json(lua_State* L, int index, int arg_index, const std::string& path) {
  return convert(L, index, arg_index, path, 0);
}

void lx_push_json(lua_State* L, const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::boolean:
      lua_pushboolean(L, value.get<bool>());
      return;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      lua_pushnumber(L, value.get<double>());
      return;
    case nlohmann::json::value_t::string:
      lua_pushstring(L, value.get_ref<const std::string&>().c_str());
      return;
    case nlohmann::json::value_t::array: {
      lua_createtable(L, static_cast<int>(value.size()), 0);
      int i = 1;
      for (const auto& element : value) {
        lx_push_json(L, element);
        lua_rawseti(L, -2, i++);
      }
      return;
    }
    case nlohmann::json::value_t::object:
      lua_createtable(L, 0, static_cast<int>(value.size()));
      if (value.empty()) lx_mark_map(L, -1);  // converts back to {} rather than []
      for (const auto& [key, element] : value.items()) {
        lx_push_json(L, element);
        lua_setfield(L, -2, key.c_str());
      }
      return;
    default:
      lua_pushnil(L);
  }
}

void lx_mark_map(lua_State* L, int index) {
  index = index < 0 ? lua_gettop(L) + index + 1 : index;
  push_map_metatable(L);
  lua_setmetatable(L, index);
}

bool lx_is_map(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TTABLE || !lua_getmetatable(L, index)) return false;
  push_map_metatable(L);
  bool marked = lua_rawequal(L, -1, -2) != 0;
  lua_pop(L, 2);
  return marked;
}

}  // namespace lrhost::bindings
