// Lua binding of learning-rate schedulers: lr.optim.scheduler(optimizer, {type =, warmup_steps =,
// total_steps =, num_cycles =}); methods step(), lr([group]), last_step(), set_step(n).
// The scheduler keeps its optimizer alive, so releasing the optimizer first is safe.
#include "bindings/wrap_scheduler.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_optimizer.hpp"
#include "host/optim/scheduler.hpp"

namespace lrhost::bindings {

namespace {

SchedulerHandle& check_scheduler(lua_State* L, int index) {
  return lx_check<SchedulerHandle>(L, index);
}

int w_scheduler(lua_State* L) {
  return lx_guard(L, "lr.optim.scheduler", [&] {
    auto optimizer = lx_check_shared<optim::Optimizer>(L, 1);
    lx_check_table(L, 2, "scheduler options {type =, warmup_steps =, total_steps =}");
    auto spec = optim::ScheduleSpec::from_json(lx_to_json(L, 2, 2, "scheduler"));
    auto handle =
        std::shared_ptr<SchedulerHandle>(new SchedulerHandle{optimizer, optim::LrScheduler(*optimizer, spec)});
    lx_push(L, handle);
    return 1;
  });
}

int w_step(lua_State* L) {
  return lx_guard(L, "Scheduler:step", [&] {
    check_scheduler(L, 1).scheduler.step();
    return 0;
  });
}

int w_lr(lua_State* L) {
  return lx_guard(L, "Scheduler:lr", [&] {
    auto& handle = check_scheduler(L, 1);
    int64_t group = lx_opt_integer(L, 2).value_or(1);
    if (group < 1 || group > static_cast<int64_t>(handle.optimizer->num_groups()))
      throw LxArgError(2, "group must be between 1 and " + std::to_string(handle.optimizer->num_groups()));
    lua_pushnumber(L, handle.optimizer->lr(static_cast<std::size_t>(group - 1)));
    return 1;
  });
}

int w_last_step(lua_State* L) {
  return lx_guard(L, "Scheduler:last_step", [&] {
    lua_pushnumber(L, static_cast<double>(check_scheduler(L, 1).scheduler.last_step()));
    return 1;
  });
}

int w_set_step(lua_State* L) {
  return lx_guard(L, "Scheduler:set_step", [&] {
    check_scheduler(L, 1).scheduler.set_step(lx_check_integer(L, 2));
    return 0;
  });
}

}  // namespace

void open_scheduler(lua_State* L, int module) {
  const luaL_Reg methods[] = {
      {"step", w_step}, {"lr", w_lr}, {"last_step", w_last_step}, {"set_step", w_set_step}, {nullptr, nullptr}};
  lx_register_type(L, LxTraits<SchedulerHandle>::type, methods);
  lua_getfield(L, module, "optim");
  lua_pushcfunction(L, w_scheduler);
  lua_setfield(L, -2, "scheduler");
  lua_pop(L, 1);
}

}  // namespace lrhost::bindings
