// Lua binding of evaluation environments and rollout videos:
//   lr.env.push{seed =, max_steps =, image_size =, second_camera =} -> PushEnv with reset([seed]),
//   step(action), render(), expert_action(), is_success(), final_distance(), steps(), task() (the
//   episode's instruction, as the dataset's meta/tasks phrases it);
//   lr.video.write(path, frames, fps) -> number of frames written.
// Observations are tables of unbatched tensors keyed like a dataset item ("observation.state", ...).
#include <array>
#include <limits>
#include <optional>
#include <string>

#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/config/config_reader.hpp"
#include "host/sim/push_env.hpp"
#include "host/sim/rollout_video.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<sim::PushEnv> {
  static constexpr LxType type{"PushEnv", "lrhost.PushEnv"};
};

namespace {
sim::PushEnv& check_env(lua_State* L, int index) {
  return lx_check<sim::PushEnv>(L, index);
}

std::string shape_text(const torch::Tensor& tensor) {
  std::string text = "[";
  for (int64_t d = 0; d < tensor.dim(); ++d) text += (d ? ", " : "") + std::to_string(tensor.size(d));
  return text + "]";
}

int w_push(lua_State* L) {
  return lx_guard(L, "lr.env.push", [&] {
    nlohmann::json table = nlohmann::json::object();
    if (!lua_isnoneornil(L, 1)) {
      lx_check_table(L, 1, "options table {seed =, max_steps =, image_size =, second_camera =}");
      table = lx_to_json(L, 1, 1, "push");
      if (table.is_array() && table.empty()) table = nlohmann::json::object();  // {} reads as an empty list
      if (!table.is_object()) throw LxArgError(1, "options must be named keys (seed =, max_steps =, ...), not a list");
    }
    config::ConfigReader reader(table, "lr.env.push");
    sim::PushEnvOptions options;
    int64_t seed = reader.integer("seed", 0);
    if (seed < 0) throw util::ConfigError("lr.env.push: 'seed' must be >= 0, got " + std::to_string(seed));
    options.seed = static_cast<uint64_t>(seed);
    // Range checks (and their messages naming the option) are PushEnv's own; here only what fits an int.
    auto int_option = [&](const std::string& key, int fallback) {
      int64_t value = reader.integer(key, fallback);
      if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
        throw util::ConfigError("lr.env.push: '" + key + "' is out of range, got " + std::to_string(value));
      return static_cast<int>(value);
    };
    options.max_steps = int_option("max_steps", options.max_steps);
    options.image_size = int_option("image_size", options.image_size);
    options.second_camera = reader.boolean("second_camera", options.second_camera);
    reader.reject_unknown();
    lx_push(L, std::make_shared<sim::PushEnv>(options));
    return 1;
  });
}

void push_observation(lua_State* L, sim::Observation observation) {
  push_batch(L, std::move(observation));
}

int w_reset(lua_State* L) {
  return lx_guard(L, "PushEnv:reset", [&] {
    auto& env = check_env(L, 1);
    std::optional<int64_t> seed = lx_opt_integer(L, 2);
    if (seed && *seed < 0) throw LxArgError(2, "the episode seed must be >= 0, got " + std::to_string(*seed));
    push_observation(L, seed ? env.reset(static_cast<uint64_t>(*seed)) : env.reset());
    return 1;
  });
}

// An action tensor [2] or [1, 2] of any dtype and device, as two floats on the CPU.
std::array<float, 2> check_action(lua_State* L, int index) {
  if (!lx_is<torch::Tensor>(L, index))
    throw LxArgError(index, "expected an action Tensor of shape [2] or [1, 2], got " + lx_typename(L, index));
  const torch::Tensor& tensor = check_tensor(L, index);
  bool shape_ok =
      (tensor.dim() == 1 && tensor.size(0) == 2) || (tensor.dim() == 2 && tensor.size(0) == 1 && tensor.size(1) == 2);
  if (!shape_ok) throw LxArgError(index, "expected an action of shape [2] or [1, 2], got " + shape_text(tensor));
  if (tensor.is_complex()) throw LxArgError(index, "expected a real action tensor, got a complex one");
  torch::Tensor values = tensor.detach().to(torch::kCPU).to(torch::kFloat).reshape({2}).contiguous();
  return {values[0].item<float>(), values[1].item<float>()};
}

int w_step(lua_State* L) {
  return lx_guard(L, "PushEnv:step", [&] {
    auto& env = check_env(L, 1);
    sim::StepResult result = env.step(check_action(L, 2));
    push_observation(L, std::move(result.observation));
    lua_pushnumber(L, result.reward);
    lua_pushboolean(L, result.terminated);
    lua_pushboolean(L, result.truncated);
    return 4;
  });
}

int w_render(lua_State* L) {
  return lx_guard(L, "PushEnv:render", [&] {
    push_tensor(L, check_env(L, 1).render());
    return 1;
  });
}

int w_expert_action(lua_State* L) {
  return lx_guard(L, "PushEnv:expert_action", [&] {
    std::array<float, 2> action = check_env(L, 1).expert_action();
    push_tensor(L, torch::tensor({action[0], action[1]}, torch::kFloat));
    return 1;
  });
}

int w_is_success(lua_State* L) {
  return lx_guard(L, "PushEnv:is_success", [&] {
    lua_pushboolean(L, check_env(L, 1).is_success());
    return 1;
  });
}

int w_task(lua_State* L) {
  return lx_guard(L, "PushEnv:task", [&] {
    lua_pushstring(L, sim::task_instruction(check_env(L, 1).world()));
    return 1;
  });
}

int w_final_distance(lua_State* L) {
  return lx_guard(L, "PushEnv:final_distance", [&] {
    lua_pushnumber(L, check_env(L, 1).final_distance());
    return 1;
  });
}

int w_steps(lua_State* L) {
  return lx_guard(L, "PushEnv:steps", [&] {
    lua_pushnumber(L, check_env(L, 1).steps());
    return 1;
  });
}

int w_video_write(lua_State* L) {
  return lx_guard(L, "lr.video.write", [&] {
    std::string path = lx_check_string(L, 1);
    if (path.empty()) throw LxArgError(1, "expected the video's file path, got an empty string");
    if (!lx_is<torch::Tensor>(L, 2))
      throw LxArgError(
          2, "frames of video '" + path + "': expected a uint8 Tensor [T, H, W, 3], got " + lx_typename(L, 2));
    int64_t fps = lx_check_integer(L, 3);
    if (fps < 1 || fps > 1000)
      throw LxArgError(3, "fps of video '" + path + "' must be between 1 and 1000, got " + std::to_string(fps));
    lua_pushnumber(L, static_cast<double>(sim::write_rollout_video(path, check_tensor(L, 2), static_cast<int>(fps))));
    return 1;
  });
}

}  // namespace

void open_env(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"reset", w_reset},
                              {"step", w_step},
                              {"render", w_render},
                              {"expert_action", w_expert_action},
                              {"is_success", w_is_success},
                              {"final_distance", w_final_distance},
                              {"task", w_task},
                              {"steps", w_steps},
                              {nullptr, nullptr}};
  lx_register_type(L, LxTraits<sim::PushEnv>::type, methods);

  lua_newtable(L);
  const luaL_Reg env_functions[] = {{"push", w_push}, {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), env_functions);
  lua_setfield(L, module, "env");

  lua_newtable(L);
  const luaL_Reg video_functions[] = {{"write", w_video_write}, {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), video_functions);
  lua_setfield(L, module, "video");
}

}  // namespace lrhost::bindings
