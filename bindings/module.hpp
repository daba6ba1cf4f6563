// Assembly of the `lrhost` Lua module: each wrap_<type>.cpp contributes one open_<type> function
// that registers its metatable and adds its functions to the module table at `module`.
#pragma once
#include <lua.hpp>

namespace lrhost::bindings {

int luaopen_lrhost(lua_State* L);

void open_lrhost_functions(lua_State* L, int module);  // wrap_lrhost.cpp: seed, no_grad, log, clock
void open_config(lua_State* L, int module);            // wrap_config.cpp: lr.config
void open_tensor(lua_State* L, int module);            // wrap_tensor.cpp: Tensor and tensor functions
void open_policy(lua_State* L, int module);            // wrap_policy.cpp: lr.policy
void open_optimizer(lua_State* L, int module);         // wrap_optimizer.cpp: lr.optim.*
void open_scheduler(lua_State* L, int module);         // wrap_scheduler.cpp: lr.optim.scheduler
void open_ema(lua_State* L, int module);               // wrap_ema.cpp: lr.optim.ema, Ema
void open_accelerator(lua_State* L, int module);       // wrap_accelerator.cpp: lr.accelerator
void open_dataset(lua_State* L, int module);           // wrap_dataset.cpp: lr.dataset, lr.default_dataset
void open_loader(lua_State* L, int module);            // wrap_loader.cpp: Loader
void open_metrics(lua_State* L, int module);           // wrap_metrics.cpp: lr.metrics, MetricsSink, TrainingMeter
void open_env(lua_State* L, int module);               // wrap_env.cpp: lr.env.push, lr.video.write

}  // namespace lrhost::bindings
