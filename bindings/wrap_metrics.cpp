// Lua binding of where metrics go and how a run is timed:
//   lr.metrics.jsonl(path [, {first_step = 1}])           -> MetricsSink (metrics.jsonl, resumable)
//   lr.metrics.tensorboard(dir [, {first_step = 1}])      -> MetricsSink (TensorBoard event files)
//   acc:add_metrics_sink(sink)  (wrap_accelerator.cpp)    acc:log then feeds it on the main process
// and the TrainingMeter that acc:training_meter{...} builds:
//   meter:mark(phase)  meter:end_step(step)  meter:window() -> {<phase>_s, step_s, samples_per_s}
//   meter:progress(step) -> "step k/N (x%) | ..."  meter:elapsed_s()  meter:finish() (status line off)
// and the EvalProgress that acc:eval_progress{episodes = N} builds (closed-loop evaluation):
//   progress:episode_done(success)  progress:text() -> "episode k/N (x%) | success s/k ..."  progress:finish()
#include "bindings/wrap_metrics.hpp"

#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "host/metrics/jsonl_sink.hpp"
#include "host/metrics/recipe_options.hpp"
#include "host/metrics/tensorboard_sink.hpp"
#include "host/util/error.hpp"

namespace lrhost::bindings {
namespace {

// The sinks' options table {first_step = k} (metrics::read_sink_first_step).
int64_t sink_first_step(lua_State* L, int index, const char* function) {
  if (lua_isnoneornil(L, index)) return 1;
  lx_check_table(L, index, "options {first_step = ...}");
  return metrics::read_sink_first_step(lx_options(L, index, index, function), function);
}

int w_jsonl(lua_State* L) {
  return lx_guard(L, "lr.metrics.jsonl", [&] {
    std::string path = lx_check_string(L, 1);
    auto sink = std::make_shared<metrics::JsonlSink>(path, sink_first_step(L, 2, "lr.metrics.jsonl"));
    lx_push<metrics::MetricsSink>(L, sink);
    return 1;
  });
}

int w_tensorboard(lua_State* L) {
  return lx_guard(L, "lr.metrics.tensorboard", [&] {
    std::string dir = lx_check_string(L, 1);
    auto sink = std::make_shared<metrics::TensorBoardSink>(dir, sink_first_step(L, 2, "lr.metrics.tensorboard"));
    lx_push<metrics::MetricsSink>(L, sink);
    return 1;
  });
}

metrics::TrainingMeter& check_meter(lua_State* L, int index) {
  return lx_check<metrics::TrainingMeter>(L, index);
}

int w_mark(lua_State* L) {
  return lx_guard(L, "TrainingMeter:mark", [&] {
    check_meter(L, 1).mark(lx_check_string(L, 2));
    return 0;
  });
}

int w_end_step(lua_State* L) {
  return lx_guard(L, "TrainingMeter:end_step", [&] {
    check_meter(L, 1).end_step(lx_check_integer(L, 2));
    return 0;
  });
}

int w_window(lua_State* L) {
  return lx_guard(L, "TrainingMeter:window", [&] {
    auto window = check_meter(L, 1).take_window();
    lua_createtable(L, 0, static_cast<int>(window.size()));
    for (const auto& [name, value] : window) {
      lua_pushnumber(L, value);
      lua_setfield(L, -2, name.c_str());
    }
    return 1;
  });
}

int w_progress(lua_State* L) {
  return lx_guard(L, "TrainingMeter:progress", [&] {
    std::string text = check_meter(L, 1).progress_text(lx_check_integer(L, 2));
    lua_pushlstring(L, text.data(), text.size());
    return 1;
  });
}

int w_finish(lua_State* L) {
  return lx_guard(L, "TrainingMeter:finish", [&] {
    check_meter(L, 1).finish();
    return 0;
  });
}

int w_elapsed_s(lua_State* L) {
  return lx_guard(L, "TrainingMeter:elapsed_s", [&] {
    lua_pushnumber(L, check_meter(L, 1).elapsed_s());
    return 1;
  });
}

metrics::EvalProgress& check_eval_progress(lua_State* L, int index) {
  return lx_check<metrics::EvalProgress>(L, index);
}

int w_episode_done(lua_State* L) {
  return lx_guard(L, "EvalProgress:episode_done", [&] {
    auto& progress = check_eval_progress(L, 1);
    if (!lua_isboolean(L, 2))
      throw LxArgError(2, "expected a boolean (the episode's success), got " + lx_typename(L, 2));
    progress.episode_done(lua_toboolean(L, 2) != 0);
    return 0;
  });
}

int w_eval_text(lua_State* L) {
  return lx_guard(L, "EvalProgress:text", [&] {
    std::string text = check_eval_progress(L, 1).progress_text();
    lua_pushlstring(L, text.data(), text.size());
    return 1;
  });
}

int w_eval_finish(lua_State* L) {
  return lx_guard(L, "EvalProgress:finish", [&] {
    check_eval_progress(L, 1).finish();
    return 0;
  });
}

}  // namespace

void open_metrics(lua_State* L, int module) {
  const luaL_Reg no_methods[] = {{nullptr, nullptr}};
  lx_register_type(L, LxTraits<metrics::MetricsSink>::type, no_methods);
  const luaL_Reg meter_methods[] = {{"mark", w_mark},         {"end_step", w_end_step},   {"window", w_window},
                                    {"progress", w_progress}, {"elapsed_s", w_elapsed_s}, {"finish", w_finish},
                                    {nullptr, nullptr}};
  lx_register_type(L, LxTraits<metrics::TrainingMeter>::type, meter_methods);
  const luaL_Reg eval_methods[] = {
      {"episode_done", w_episode_done}, {"text", w_eval_text}, {"finish", w_eval_finish}, {nullptr, nullptr}};
  lx_register_type(L, LxTraits<metrics::EvalProgress>::type, eval_methods);
  lua_newtable(L);
  const luaL_Reg functions[] = {{"jsonl", w_jsonl}, {"tensorboard", w_tensorboard}, {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), functions);
  lua_setfield(L, module, "metrics");
}

}  // namespace lrhost::bindings
