// Lua binding of policies: lr.policy.new(cfg [, features]) builds one from the registry;
// methods forward(batch), select_action(batch), parameters(), named_parameters(), param_groups(), train(), eval(),
// to(device), num_parameters(), config(), type_name().
#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_dataset.hpp"
#include "bindings/wrap_policy.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/policy/registry.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::bindings {
namespace {

policy::Policy& check_policy(lua_State* L, int index) { return lx_check<policy::Policy>(L, index); }

// The features a policy is built for: a Dataset (LeRobot's dataset_to_policy_features over its
// info.json) or a table {inputs = {name = {shape...}}, outputs = {...}} whose types follow the key
// names as LeRobot's rules do (3-D observation.images.* -> VISUAL, action* -> ACTION, ...).
policy::PolicyFeatures check_features(lua_State* L, int index) {
  policy::PolicyFeatures features;
  if (lua_isnoneornil(L, index)) return features;
  if (lx_is<data::LeRobotDataset>(L, index))
    return policy::PolicyFeatures::from_dataset(lx_check<data::LeRobotDataset>(L, index).meta().info);
  auto table = lx_to_json(L, index, index, "features");
  for (const char* side : {"inputs", "outputs"}) {
    if (!table.contains(side)) continue;
    for (const auto& [name, shape] : table[side].items()) {
      if (!shape.is_array()) throw LxArgError(index, std::string("features.") + side + "." + name + " must be a shape list");
      data::FeatureSpec spec;
      spec.key = name;
      spec.shape = shape.get<std::vector<int64_t>>();
      if (spec.shape.size() == 3 && name.rfind("observation.image", 0) == 0) spec.kind = data::FeatureKind::Image;
      std::string type = policy::policy_feature_type(spec);
      if (type.empty()) throw LxArgError(index, std::string("features.") + side + "." + name + " is not a policy feature (observation* or action*)");
      (type == "ACTION" ? features.outputs : features.inputs).push_back({name, type, spec.shape});
    }
  }
  return features;
}

int w_policy_new(lua_State* L) {
  return lx_guard(L, "lr.policy.new", [&] {
    ensure_not_show_mode(L, "lr.policy.new");
    lx_check_table(L, 1, "policy config table with 'type'");
    auto config = lx_to_json(L, 1, 1, "policy");
    lx_push(L, policy::create_policy(config, check_features(L, 2)));
    return 1;
  });
}

int w_policy_types(lua_State* L) {
  return lx_guard(L, "lr.policy.types", [&] {
    lx_push_json(L, policy::registered_policy_types());
    return 1;
  });
}


int w_forward(lua_State* L) {
  return lx_guard(L, "Policy:forward", [&] {
    auto& p = check_policy(L, 1);
    auto out = p.run(check_batch(L, 2));
    push_tensor(L, out.loss);
    lua_createtable(L, 0, static_cast<int>(out.parts.size()));
    for (auto& [name, tensor] : out.parts) {
      push_tensor(L, tensor);
      lua_setfield(L, -2, name.c_str());
    }
    return 2;
  });
}

int w_select_action(lua_State* L) {
  return lx_guard(L, "Policy:select_action", [&] {
    push_tensor(L, check_policy(L, 1).select_action(check_batch(L, 2)));
    return 1;
  });
}

void push_tensor_list(lua_State* L, const std::vector<torch::Tensor>& tensors) {
  lua_createtable(L, static_cast<int>(tensors.size()), 0);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    push_tensor(L, tensors[i]);
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

int w_parameters(lua_State* L) {
  return lx_guard(L, "Policy:parameters", [&] {
    push_tensor_list(L, check_policy(L, 1).parameters());
    return 1;
  });
}

int w_named_parameters(lua_State* L) {
  return lx_guard(L, "Policy:named_parameters", [&] {
    auto named = check_policy(L, 1).named_parameters();
    lua_createtable(L, 0, static_cast<int>(named.size()));
    for (const auto& item : named) {
      push_tensor(L, item.value());
      lua_setfield(L, -2, item.key().c_str());
    }
    return 1;
  });
}

int w_param_groups(lua_State* L) {
  return lx_guard(L, "Policy:param_groups", [&] {
    auto groups = check_policy(L, 1).param_groups();
    lua_createtable(L, static_cast<int>(groups.size()), 0);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      lua_createtable(L, 0, 4);
      lua_pushstring(L, groups[i].name.c_str());
      lua_setfield(L, -2, "name");
      push_tensor_list(L, groups[i].params);
      lua_setfield(L, -2, "params");
      if (groups[i].lr) {
        lua_pushnumber(L, *groups[i].lr);
        lua_setfield(L, -2, "lr");
      }
      if (groups[i].weight_decay) {
        lua_pushnumber(L, *groups[i].weight_decay);
        lua_setfield(L, -2, "weight_decay");
      }
      lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
  });
}

int w_train(lua_State* L) {
  return lx_guard(L, "Policy:train", [&] {
    check_policy(L, 1).train(lx_opt_boolean(L, 2).value_or(true));
    lua_settop(L, 1);
    return 1;
  });
}

int w_eval(lua_State* L) {
  return lx_guard(L, "Policy:eval", [&] {
    check_policy(L, 1).eval();
    lua_settop(L, 1);
    return 1;
  });
}

int w_is_training(lua_State* L) {
  return lx_guard(L, "Policy:is_training", [&] {
    lua_pushboolean(L, check_policy(L, 1).is_training());
    return 1;
  });
}

int w_to(lua_State* L) {
  return lx_guard(L, "Policy:to", [&] {
    auto& p = check_policy(L, 1);
    std::string target = lx_check_string(L, 2);
    if (target == "cpu" || target.rfind("cuda", 0) == 0) p.to(util::parse_device(target));
    else p.to(util::parse_dtype(target));
    lua_settop(L, 1);
    return 1;
  });
}

int w_num_parameters(lua_State* L) {
  return lx_guard(L, "Policy:num_parameters", [&] {
    lua_pushnumber(L, static_cast<double>(check_policy(L, 1).num_parameters()));
    return 1;
  });
}

int w_config(lua_State* L) {
  return lx_guard(L, "Policy:config", [&] {
    lx_push_json(L, check_policy(L, 1).config());
    return 1;
  });
}

int w_type_name(lua_State* L) {
  return lx_guard(L, "Policy:type_name", [&] {
    lua_pushstring(L, check_policy(L, 1).type().c_str());
    return 1;
  });
}

}  // namespace

void open_policy(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"forward", w_forward}, {"select_action", w_select_action}, {"parameters", w_parameters},
                              {"named_parameters", w_named_parameters}, {"param_groups", w_param_groups},
                              {"train", w_train}, {"eval", w_eval}, {"is_training", w_is_training}, {"to", w_to},
                              {"num_parameters", w_num_parameters}, {"config", w_config},
                              {"type_name", w_type_name}, {nullptr, nullptr}};
  lx_register_type(L, LxTraits<policy::Policy>::type, methods);
  lua_newtable(L);
  const luaL_Reg functions[] = {{"new", w_policy_new}, {"types", w_policy_types}, {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), functions);
  lua_setfield(L, module, "policy");
}

}  // namespace lrhost::bindings
