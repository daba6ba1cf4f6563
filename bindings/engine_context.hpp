// Per-Lua-state facts the bindings need: what the CLI asked for (mode, overrides) and what the
// recipe resolved (its config). Stored in the Lua registry; owned by the engine for the run.
#pragma once
#include <lua.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "host/ckpt/recipe_snapshot.hpp"
#include "host/cli/recipe_request.hpp"

namespace lrhost::bindings {

struct EngineContext {
  cli::RecipeRequest request;
  std::optional<nlohmann::json> resolved_config;  // set by lr.config
};

void set_engine_context(lua_State* L, EngineContext* context);
EngineContext& engine_context(lua_State* L);

// The error value lr.config raises in `show` mode once the config is printed: the engine treats
// it as a successful end of the recipe, not as a failure.
void* show_finished_marker();
// The error object lr.exit_preempted raises: the recipe ends and the process exits with
// util::kPreemptedExitCode.
void* preempted_marker();

// The Lua modules loaded so far from files on the search path (the recipe's folder, recipes/lib,
// LRHOST_PATH, a resumed run's train_modules/), with the file each came from; embedded and
// standard modules are not files and are left out. Used for the recipe snapshot of checkpoints.
std::vector<ckpt::LoadedModule> loaded_file_modules(lua_State* L);

// Throws if the engine runs in `show` mode: `what` (e.g. "lr.policy.new") would do real work.
void ensure_not_show_mode(lua_State* L, const char* what);

}  // namespace lrhost::bindings
