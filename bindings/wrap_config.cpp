// Lua binding of recipe configuration: `lr.config(defaults [, derive])` merges the command-line
// overrides into the defaults (host/config does the checking), then lets the optional
// derive(cfg, plan) compute dependent values (e.g. an lr scaled to the effective batch) from
// plan = {world_size =, effective_batch =}, checks the rules every config follows (steps >= 1), logs
// the resolved config, and in `show` mode prints it as JSON (with --json: one document holding config
// and memory plan) and ends the recipe. `lr.config_json()` returns it as JSON text.
// `lr.config.map(t)` marks a defaults table as a map (free keys, given whole on the command line as
// JSON: rename_map='{"a": "b"}'); an empty `{}` is otherwise an empty list.
#include <cstdio>
#include <set>
#include <string>

#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/runtime.hpp"
#include "host/cli/show_plan.hpp"
#include "host/config/overrides.hpp"
#include "host/config/resolved_checks.hpp"
#include "host/dist/rank_env.hpp"
#include "host/policy/pretrained_overrides.hpp"
#include "host/policy/recipe_policy_type.hpp"

namespace lrhost::bindings {
namespace {

// The job shape derive() plans for: the real world size when running, the --nproc/--gpus of
// `lrhost show` when showing.
void push_plan(lua_State* L, const nlohmann::json& config, int world_size) {
  lua_createtable(L, 0, 2);
  lua_pushnumber(L, world_size);
  lua_setfield(L, -2, "world_size");
  if (config.contains("batch_size") && config["batch_size"].is_number()) {
    double accumulation = 1;
    if (config.contains("accelerator") && config["accelerator"].is_object() &&
        config["accelerator"].contains("gradient_accumulation_steps") &&
        config["accelerator"]["gradient_accumulation_steps"].is_number())
      accumulation = config["accelerator"]["gradient_accumulation_steps"].get<double>();
    lua_pushnumber(L, config["batch_size"].get<double>() * world_size * accumulation);
    lua_setfield(L, -2, "effective_batch");
  }
}

// Dotted paths of the tables marked by lr.config.map inside the defaults table at `index`.
void collect_map_keys(lua_State* L, int index, const std::string& prefix, std::set<std::string>& out, int depth = 0) {
  if (depth > 64) return;  // lx_to_json reports the cycle
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
      std::string path = prefix.empty() ? lua_tostring(L, -2) : prefix + "." + lua_tostring(L, -2);
      if (lx_is_map(L, -1))
        out.insert(path);
      else
        collect_map_keys(L, lua_gettop(L), path, out, depth + 1);
    }
    lua_pop(L, 1);
  }
}

// Fine-tuning (policy.pretrained_path set): the policy table becomes the pretrained folder's
// config.json with the command line's policy.* fields on top, so that the recipe, `lrhost show` and
// the saved config.json see the policy that trains (host/policy/pretrained_overrides.hpp).
void apply_pretrained_policy(nlohmann::json& resolved, const std::vector<std::string>& overrides) {
  if (!resolved.contains("policy") || !resolved["policy"].is_object()) return;
  const auto& policy_table = resolved["policy"];
  if (!policy_table.contains("pretrained_path") || !policy_table["pretrained_path"].is_string() ||
      policy_table["pretrained_path"].get<std::string>().empty())
    return;
  auto pretrained = policy::pretrained_policy_table(policy_table, policy::explicit_policy_fields(overrides));
  std::string typed;
  for (const auto& field : pretrained.from_command_line) typed += (typed.empty() ? "" : ", ") + field;
  spdlog::info("policy: {} from {}; from the command line: {}", pretrained.policy.value("type", std::string()),
               (pretrained.dir / "config.json").string(), typed.empty() ? "none" : typed);
  resolved["policy"] = std::move(pretrained.policy);
}

int w_config(lua_State* L) {
  bool show = false;
  int results = lx_guard(L, "lr.config", [&] {
    lx_check_table(L, 1, "table of defaults");
    if (!lua_isnoneornil(L, 2)) lx_check_function(L, 2);
    auto& context = engine_context(L);
    if (context.resolved_config)
      throw util::ConfigError("lr.config was already called; a recipe resolves its config once",
                              "keep one lr.config{...} call and pass parts of its result around");
    std::vector<config::Override> overrides;
    for (const auto& argument : context.request.overrides) overrides.push_back(config::parse_override(argument));
    std::set<std::string> map_keys;
    collect_map_keys(L, 1, "", map_keys);
    const auto defaults = lx_to_json(L, 1, 1, "");
    auto resolved = config::apply_overrides(defaults, overrides, map_keys);
    policy::check_policy_type_kept(defaults, resolved, context.request.recipe_path);
    if (lua_isfunction(L, 2)) {
      int world_size = context.request.planned_world_size > 0 ? context.request.planned_world_size
                                                              : dist::rank_env_from_environment().world_size;
      lua_pushvalue(L, 2);
      lx_push_json(L, resolved);
      int table = lua_gettop(L);
      push_plan(L, resolved, world_size);
      lua_pushvalue(L, table);  // keep the table after the call
      lua_insert(L, table - 1);
      lua_call(L, 2, 0);
      resolved = lx_to_json(L, lua_gettop(L), 2, "");
      lua_pop(L, 1);
    }
    apply_pretrained_policy(resolved, context.request.overrides);
    config::check_resolved_config(resolved);
    context.resolved_config = resolved;
    if (context.request.mode == cli::RecipeMode::show) {
      int64_t world_size = context.request.planned_world_size > 0 ? context.request.planned_world_size : 1;
      if (context.request.json_output) {
        std::optional<cli::ShownPlan> plan;
        {
          cli::StdoutToStderr quiet;  // building the plan may write the built-in dataset (encoder output)
          plan = cli::show_memory_plan(resolved, world_size, context.request.planned_gpu_memory_bytes);
        }
        std::printf("%s\n", cli::show_json_document(resolved, plan).dump(2).c_str());
      } else {
        std::printf("%s\n", resolved.dump(2).c_str());
        if (auto plan = cli::show_memory_plan(resolved, world_size, context.request.planned_gpu_memory_bytes))
          std::printf("\n%s", plan->text.c_str());
      }
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

// lr.config(...) through the callable table: drop the table itself, the first argument of __call.
int w_config_call(lua_State* L) {
  lua_remove(L, 1);
  return w_config(L);
}

int w_config_map(lua_State* L) {
  return lx_guard(L, "lr.config.map", [&] {
    if (lua_isnoneornil(L, 1)) {
      lua_settop(L, 0);
      lua_newtable(L);
    }
    lx_check_table(L, 1, "table of key = value (a map)");
    lua_settop(L, 1);
    auto entries = lx_to_json(L, 1, 1, "map");
    if (entries.is_array() && !entries.empty()) throw LxArgError(1, "a map has string keys, not list entries");
    lx_mark_map(L, 1);
    return 1;
  });
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
  // lr.config is a callable table: lr.config{...} resolves the config, lr.config.map{} marks a map.
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, w_config_map);
  lua_setfield(L, -2, "map");
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, w_config_call);
  lua_setfield(L, -2, "__call");
  lua_setmetatable(L, -2);
  lua_setfield(L, module, "config");
  lua_pushcfunction(L, w_config_json);
  lua_setfield(L, module, "config_json");
}

}  // namespace lrhost::bindings
