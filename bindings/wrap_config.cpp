// Lua binding of recipe configuration: `lr.config(defaults)` merges the command-line overrides
// into the defaults (host/config does the checking), logs the resolved config, and in `show`
// mode prints it as JSON and ends the recipe. `lr.config_json()` returns it as JSON text.
#include <cstdio>

#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/runtime.hpp"
#include "host/config/overrides.hpp"

namespace lrhost::bindings {
namespace {

int w_config(lua_State* L) {
  bool show = false;
  int results = lx_guard(L, "lr.config", [&] {
    lx_check_table(L, 1, "table of defaults");
    auto& context = engine_context(L);
    if (context.resolved_config)
      throw util::ConfigError("lr.config was already called; a recipe resolves its config once",
                              "keep one lr.config{...} call and pass parts of its result around");
    std::vector<config::Override> overrides;
    for (const auto& argument : context.request.overrides) overrides.push_back(config::parse_override(argument));
    auto resolved = config::apply_overrides(lx_to_json(L, 1, 1, ""), overrides);
    context.resolved_config = resolved;
    if (context.request.mode == cli::RecipeMode::show) {
      std::printf("%s\n", resolved.dump(2).c_str());
      std::fflush(stdout);
      show = true;
      return 0;
    }
    spdlog::info("config: {}", resolved.dump());
    lx_push_json(L, resolved);
    return 1;
  });
  if (show) {
    lua_pushlightuserdata(L, show_finished_marker());
    return lua_error(L);
  }
  return results;
}

int w_config_json(lua_State* L) {
  return lx_guard(L, "lr.config_json", [&] {
    auto indent = lx_opt_integer(L, 2).value_or(2);
    if (!lua_isnoneornil(L, 1)) {
      auto text = lx_to_json(L, 1, 1, "").dump(static_cast<int>(indent));
      lua_pushstring(L, text.c_str());
      return 1;
    }
    auto& context = engine_context(L);
    if (!context.resolved_config) throw util::ConfigError("lr.config_json(): lr.config has not been called yet");
    lua_pushstring(L, context.resolved_config->dump(static_cast<int>(indent)).c_str());
    return 1;
  });
}

}  // namespace

void open_config(lua_State* L, int module) {
  lua_pushcfunction(L, w_config);
  lua_setfield(L, module, "config");
  lua_pushcfunction(L, w_config_json);
  lua_setfield(L, module, "config_json");
}

}  // namespace lrhost::bindings
