// Lua binding of the EMA of the weights (host/optim/weight_ema.hpp):
//   lr.optim.ema_defaults() -> the recipe's `ema` table (every key, EMA off)
//   lr.optim.ema(policy, optimizer, cfg.ema, acc) -> Ema, or nil on a rank that keeps none
//     (ema.on_main_only: ranks other than 0). Call it after acc:prepare: it tracks the policy's
//     parameters the optimizer trains (under FSDP this rank's shards) and moves after every applied
//     optimizer step by itself. ConfigError for on_main_only under FSDP (every rank holds only its
//     shards) or with enable = false.
//   methods: step() -> updates so far, decay() -> the last update's decay, bytes() -> shadow bytes on
//     this rank, swap_in() / swap_out() (the EMA weights into the parameters and back), settings()
#include "bindings/wrap_ema.hpp"

#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_accelerator.hpp"
#include "bindings/wrap_optimizer.hpp"
#include "bindings/wrap_policy.hpp"

namespace lrhost::bindings {
namespace {

optim::WeightEma& check_ema(lua_State* L, int index) {
  return lx_check<optim::WeightEma>(L, index);
}

int w_ema_defaults(lua_State* L) {
  return lx_guard(L, "lr.optim.ema_defaults", [&] {
    lx_push_json(L, nlohmann::json::parse(optim::default_ema_table().dump()));
    return 1;
  });
}

int w_ema(lua_State* L) {
  return lx_guard(L, "lr.optim.ema", [&] {
    auto& policy = lx_check<policy::Policy>(L, 1);
    auto optimizer = lx_check_shared<optim::Optimizer>(L, 2);
    auto settings = optim::EmaSettings::read(lx_to_json(L, 3, 3, "ema"), "ema");
    auto& acc = lx_check<accel::Accelerator>(L, 4);
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : policy.named_parameters()) named.emplace_back(item.key(), item.value());
    auto ema = optim::attach_weight_ema(settings, named, *optimizer, acc.is_sharded(), acc.is_main_process());
    if (!ema) {
      lua_pushnil(L);
      return 1;
    }
    lx_push(L, ema);
    return 1;
  });
}

int w_step(lua_State* L) {
  return lx_guard(L, "Ema:step", [&] {
    lua_pushnumber(L, static_cast<double>(check_ema(L, 1).optimization_step()));
    return 1;
  });
}

int w_decay(lua_State* L) {
  return lx_guard(L, "Ema:decay", [&] {
    lua_pushnumber(L, check_ema(L, 1).last_decay());
    return 1;
  });
}

int w_bytes(lua_State* L) {
  return lx_guard(L, "Ema:bytes", [&] {
    lua_pushnumber(L, static_cast<double>(check_ema(L, 1).shadow_bytes()));
    return 1;
  });
}

int w_swap_in(lua_State* L) {
  return lx_guard(L, "Ema:swap_in", [&] {
    check_ema(L, 1).swap_in();
    return 0;
  });
}

int w_swap_out(lua_State* L) {
  return lx_guard(L, "Ema:swap_out", [&] {
    check_ema(L, 1).swap_out();
    return 0;
  });
}

int w_settings(lua_State* L) {
  return lx_guard(L, "Ema:settings", [&] {
    lx_push_json(L, nlohmann::json::parse(check_ema(L, 1).settings().to_json().dump()));
    return 1;
  });
}

}  // namespace

void open_ema(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"step", w_step},       {"decay", w_decay},       {"bytes", w_bytes},
                              {"swap_in", w_swap_in}, {"swap_out", w_swap_out}, {"settings", w_settings},
                              {nullptr, nullptr}};
  lx_register_type(L, LxTraits<optim::WeightEma>::type, methods);
  lua_getfield(L, module, "optim");
  lua_pushcfunction(L, w_ema);
  lua_setfield(L, -2, "ema");
  lua_pushcfunction(L, w_ema_defaults);
  lua_setfield(L, -2, "ema_defaults");
  lua_pop(L, 1);
}

}  // namespace lrhost::bindings
