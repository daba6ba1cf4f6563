// Lua binding of optimizers: lr.optim.adamw / adam / sgd(params, options). `params` is a Policy
// (its param_groups), a list of Tensors, or a list of groups {params = {...}, lr =, weight_decay =}.
// Methods: step(), zero_grad(), lr([group]), set_lr(lr [, group]), clip_grad_norm(max),
// num_groups(), parameters(). Group numbers are Lua list positions (1-based).
#include "bindings/wrap_optimizer.hpp"
#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_policy.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/launch/unused_run_dir.hpp"

namespace lrhost::bindings {
namespace {

optim::Optimizer& check_optimizer(lua_State* L, int index) {
  return lx_check<optim::Optimizer>(L, index);
}

std::vector<torch::Tensor> tensors_of_list(lua_State* L, int list, int arg, const std::string& where) {
  std::vector<torch::Tensor> tensors;
  auto n = static_cast<int>(lua_objlen(L, list));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, list, i);
    if (!lx_is<torch::Tensor>(L, -1)) {
      std::string got = lx_typename(L, -1);
      lua_pop(L, 1);
      throw LxArgError(arg, where + "[" + std::to_string(i) + "] is a " + got + ", expected Tensor");
    }
    tensors.push_back(check_tensor(L, lua_gettop(L)));
    lua_pop(L, 1);
  }
  return tensors;
}

std::vector<policy::ParamGroup> check_param_groups(lua_State* L, int index) {
  if (lx_is<policy::Policy>(L, index)) return lx_check<policy::Policy>(L, index).param_groups();
  lx_check_table(L, index, "Policy, list of Tensors, or list of parameter groups");
  lua_rawgeti(L, index, 1);
  bool plain_list = lx_is<torch::Tensor>(L, -1);
  bool empty = lua_isnil(L, -1);
  lua_pop(L, 1);
  if (empty) throw LxArgError(index, "no parameters given (empty list)");
  if (plain_list) return {policy::ParamGroup{"default", tensors_of_list(L, index, index, "params"), {}, {}}};
  std::vector<policy::ParamGroup> groups;
  auto n = static_cast<int>(lua_objlen(L, index));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, index, i);
    const int group = lua_gettop(L);
    const std::string where = "groups[" + std::to_string(i) + "]";
    if (lua_type(L, group) != LUA_TTABLE) throw LxArgError(index, where + " must be a table {params = {...}}");
    if (lx_get_field(L, group, "params") != LUA_TTABLE)
      throw LxArgError(index, where + ".params must be a list of Tensors");
    auto params = tensors_of_list(L, lua_gettop(L), index, where + ".params");
    lua_pop(L, 1);
    groups.push_back(optim::read_param_group(lx_options(L, group, index, where, "params"), std::move(params),
                                             "optimizer " + where, "group" + std::to_string(i)));
    lua_pop(L, 1);
  }
  return groups;
}

template <optim::OptimizerKind Kind>
int w_make(lua_State* L) {
  static const std::string kind = optim::optimizer_kind_name(Kind), name = "lr.optim." + kind;
  return lx_guard(L, name.c_str(), [&] {
    ensure_not_show_mode(L, name.c_str());
    launch::mark_run_started();  // a recipe building an optimizer trains: its folder is kept, failed or not
    auto groups = check_param_groups(L, 1);
    nlohmann::json options = lua_isnoneornil(L, 2) ? nlohmann::json::object() : lx_to_json(L, 2, 2, "optimizer");
    lx_push(L, std::make_shared<optim::Optimizer>(kind, std::move(groups), options));
    return 1;
  });
}

// Group argument: 1-based Lua position -> 0-based index.
std::size_t check_group(lua_State* L, int index, const optim::Optimizer& opt) {
  int64_t group = lx_check_integer(L, index);
  if (group < 1 || group > static_cast<int64_t>(opt.num_groups()))
    throw LxArgError(index, "group must be between 1 and " + std::to_string(opt.num_groups()));
  return static_cast<std::size_t>(group - 1);
}

int w_step(lua_State* L) {
  return lx_guard(L, "Optimizer:step", [&] {
    lua_pushboolean(L, check_optimizer(L, 1).step());  // false: declined (accumulation, fp16 overflow)
    return 1;
  });
}

int w_zero_grad(lua_State* L) {
  return lx_guard(L, "Optimizer:zero_grad", [&] {
    check_optimizer(L, 1).zero_grad();
    return 0;
  });
}

int w_lr(lua_State* L) {
  return lx_guard(L, "Optimizer:lr", [&] {
    auto& opt = check_optimizer(L, 1);
    lua_pushnumber(L, opt.lr(lua_isnoneornil(L, 2) ? 0 : check_group(L, 2, opt)));
    return 1;
  });
}

int w_set_lr(lua_State* L) {
  return lx_guard(L, "Optimizer:set_lr", [&] {
    auto& opt = check_optimizer(L, 1);
    double lr = lx_check_number(L, 2);
    if (!(lr >= 0)) throw LxArgError(2, "lr must be >= 0");
    if (lua_isnoneornil(L, 3))
      for (std::size_t g = 0; g < opt.num_groups(); ++g) opt.set_lr(g, lr);
    else
      opt.set_lr(check_group(L, 3, opt), lr);
    return 0;
  });
}

int w_clip_grad_norm(lua_State* L) {
  return lx_guard(L, "Optimizer:clip_grad_norm", [&] {
    auto& opt = check_optimizer(L, 1);
    lua_pushnumber(L, opt.clip_grad_norm(lx_check_number(L, 2)));
    return 1;
  });
}

int w_num_groups(lua_State* L) {
  return lx_guard(L, "Optimizer:num_groups", [&] {
    lua_pushnumber(L, static_cast<double>(check_optimizer(L, 1).num_groups()));
    return 1;
  });
}

int w_parameters(lua_State* L) {
  return lx_guard(L, "Optimizer:parameters", [&] {
    auto params = check_optimizer(L, 1).parameters();
    lua_createtable(L, static_cast<int>(params.size()), 0);
    for (std::size_t i = 0; i < params.size(); ++i) {
      push_tensor(L, params[i]);
      lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
  });
}

}  // namespace

void open_optimizer(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"step", w_step},
                              {"zero_grad", w_zero_grad},
                              {"lr", w_lr},
                              {"set_lr", w_set_lr},
                              {"clip_grad_norm", w_clip_grad_norm},
                              {"num_groups", w_num_groups},
                              {"parameters", w_parameters},
                              {nullptr, nullptr}};
  lx_register_type(L, LxTraits<optim::Optimizer>::type, methods);
  lua_newtable(L);
  const luaL_Reg functions[] = {{"adamw", w_make<optim::OptimizerKind::adamw>},
                                {"adam", w_make<optim::OptimizerKind::adam>},
                                {"sgd", w_make<optim::OptimizerKind::sgd>},
                                {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), functions);
  lua_setfield(L, module, "optim");
}

}  // namespace lrhost::bindings
