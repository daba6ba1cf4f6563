// Lua binding of the module-level utilities: lr.manual_seed, lr.no_grad(fn), lr.clock(),
// lr.set_num_threads / lr.num_threads, lr.version, lr.run_dir() (the job folder every rank shares)
// lr.write_json(path, table) (atomic, parent folders created), lr.read_json(path), lr.fast_paths{...}
// and lr.log.{debug,info,warn,error} (through the rank-aware spdlog logger).
#include <chrono>
#include <cstdlib>

#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/runtime.hpp"
#include "host/config/config_reader.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/policy/fast_paths.hpp"
#include "host/util/error.hpp"
#include "host/util/profiler_trace.hpp"

namespace lrhost::bindings {
namespace {

int w_manual_seed(lua_State* L) {
  return lx_guard(L, "lr.manual_seed", [&] {
    int64_t seed = lx_check_integer(L, 1);
    if (seed < 0) throw LxArgError(1, "seed must be >= 0");
    torch::manual_seed(static_cast<uint64_t>(seed));
    return 0;
  });
}

// lr.no_grad(fn, ...) calls fn(...) with autograd recording off and returns its results. The
// guard is destroyed before any error is re-raised, so no Lua error unwinds through it.
int w_no_grad(lua_State* L) {
  int status = 0;
  int guard_result = lx_guard(L, "lr.no_grad", [&] {
    lx_check_function(L, 1);
    torch::NoGradGuard no_grad;
    status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    return 0;
  });
  (void)guard_result;
  if (status != 0) return lua_error(L);
  return lua_gettop(L);
}

// lr.profile(path, fn, ...): runs fn under the profiler and writes a Chrome trace to path.
int w_profile(lua_State* L) {
  int status = 0;
  int guard_result = lx_guard(L, "lr.profile", [&] {
    std::string path = lx_check_string(L, 1);
    lx_check_function(L, 2);
    lua_remove(L, 1);
    util::write_profiler_trace(path, [&] { status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0); });
    return 0;
  });
  (void)guard_result;
  if (status != 0) return lua_error(L);
  return lua_gettop(L);
}

int w_clock(lua_State* L) {
  using namespace std::chrono;
  lua_pushnumber(L, duration<double>(steady_clock::now().time_since_epoch()).count());
  return 1;
}

int w_set_num_threads(lua_State* L) {
  return lx_guard(L, "lr.set_num_threads", [&] {
    int64_t n = lx_check_integer(L, 1);
    if (n <= 0) throw LxArgError(1, "expected a positive number of threads");
    torch::set_num_threads(static_cast<int>(n));
    return 0;
  });
}

int w_num_threads(lua_State* L) {
  lua_pushnumber(L, torch::get_num_threads());
  return 1;
}

template <spdlog::level::level_enum Level>
int w_log(lua_State* L) {
  return lx_guard(L, "lr.log", [&] {
    // Concatenate all arguments with tostring, like print.
    std::string text;
    int n = lua_gettop(L);
    lua_getglobal(L, "tostring");
    for (int i = 1; i <= n; ++i) {
      lua_pushvalue(L, -1);
      lua_pushvalue(L, i);
      lua_call(L, 1, 1);
      text += (i > 1 ? "\t" : "") + std::string(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    spdlog::log(Level, "{}", text);
    return 0;
  });
}

// lr.write_json(path, table): the table as indented JSON (keys sorted), written to a temporary file
// and renamed, so a reader never sees half a file; the parent folders are created.
int w_write_json(lua_State* L) {
  return lx_guard(L, "lr.write_json", [&] {
    std::filesystem::path path = lx_check_string(L, 1);
    lx_check_table(L, 2, "table");
    auto json = lx_to_json(L, 2, 2, "write_json");
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    io::write_file_atomic(path, json.dump(2) + "\n");
    return 0;
  });
}

// lr.read_json(path) -> the file's JSON as Lua values (objects become tables, arrays lists); errors
// name the file.
int w_read_json(lua_State* L) {
  return lx_guard(L, "lr.read_json", [&] {
    std::filesystem::path path = lx_check_string(L, 1);
    lx_push_json(L, nlohmann::json::parse(io::read_json_file(path, {}).dump()));
    return 1;
  });
}

// lr.fast_paths([{fold_frozen_batch_norm =, channels_last =}]) -> the settings now in force, after
// applying the table's (host/policy/fast_paths.hpp; unknown keys are errors).
int w_fast_paths(lua_State* L) {
  return lx_guard(L, "lr.fast_paths", [&] {
    auto& paths = policy::fast_paths();
    if (!lua_isnoneornil(L, 1)) {
      lx_check_table(L, 1, "settings");
      const auto settings = lx_to_json(L, 1, 1, "fast_paths");
      config::ConfigReader reader(settings, "settings");
      paths.fold_frozen_batch_norm = reader.boolean("fold_frozen_batch_norm", paths.fold_frozen_batch_norm);
      paths.channels_last = reader.boolean("channels_last", paths.channels_last);
      reader.reject_unknown();
    }
    lx_push_json(L, nlohmann::json{{"fold_frozen_batch_norm", paths.fold_frozen_batch_norm},
                                   {"channels_last", paths.channels_last}});
    return 1;
  });
}

// The job's run folder (logs, errors), shared by every rank: the default home of checkpoints.
int w_run_dir(lua_State* L) {
  return lx_guard(L, "lr.run_dir", [&] {
    const char* dir = std::getenv("LRHOST_RUN_DIR");
    if (!dir || !*dir)
      throw util::Error("lr.run_dir: LRHOST_RUN_DIR is not set (the recipe was not started by lrhost)");
    lua_pushstring(L, dir);
    return 1;
  });
}

// lr.exit_preempted(): ends the recipe here; the process exits with util::kPreemptedExitCode.
// Raised as a marker the engine recognises (as `lrhost show` ends a recipe), so no Lua code after
// it runs and everything the recipe built is released as after a normal end. A plain lua_error, not
// lx_guard: the marker is no error to report.
int w_exit_preempted(lua_State* L) {
  lua_pushlightuserdata(L, preempted_marker());
  return lua_error(L);
}

}  // namespace

void open_lrhost_functions(lua_State* L, int module) {
  const luaL_Reg functions[] = {{"manual_seed", w_manual_seed},
                                {"no_grad", w_no_grad},
                                {"clock", w_clock},
                                {"set_num_threads", w_set_num_threads},
                                {"num_threads", w_num_threads},
                                {"run_dir", w_run_dir},
                                {"exit_preempted", w_exit_preempted},
                                {"write_json", w_write_json},
                                {"read_json", w_read_json},
                                {"profile", w_profile},
                                {"fast_paths", w_fast_paths},
                                {nullptr, nullptr}};
  lx_set_functions(L, module, functions);
  lua_pushstring(L, LRHOST_VERSION);
  lua_setfield(L, module, "version");
  lua_newtable(L);
  const luaL_Reg log[] = {{"debug", w_log<spdlog::level::debug>},
                          {"info", w_log<spdlog::level::info>},
                          {"warn", w_log<spdlog::level::warn>},
                          {"error", w_log<spdlog::level::err>},
                          {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), log);
  lua_setfield(L, module, "log");
}

}  // namespace lrhost::bindings
