// Lua binding of training checkpoints and raw safetensors files:
//   lr.checkpoint(output_dir, {policy =, optimizer =, scheduler =, loader =, acc =, ema =, keep_last =,
//                 resume = false|true|"auto"|path, config =, total_steps =, async =, save_freq =,
//                 save_checkpoint =}) -> Checkpoint (save_freq, save_checkpoint and total_steps default
//                 to the config keys save_freq, save_checkpoint and steps)
//     methods: resume() -> step (restores model, optimizer, scheduler, RNG and the loader position
//     in one call, once everything is built; 0 when starting fresh), resume_step() (the step
//     restored, LeRobot's `step`: the loop runs resume_step() + 1 .. steps), save(step) -> step
//     folder, is_save_step(step) -> whether the loop saves after that step (the one save rule), last_dir() -> folder or
//     nil, loader_state() -> table or nil, track_loader(loader), dir() -> the checkpoints folder, resumed_from() ->
//     folder or nil, wait() (async = true: waits for the save in flight and raises its failure; the run calls it before
//     it ends), copied_bytes() -> bytes the last async save copied to host memory on this rank, resume_command() -> the
//     `lrhost resume OUTPUT_DIR` line that continues the run
//   lr.save_safetensors(path, {name = Tensor}, [{key = "value"}]) and
//   lr.load_safetensors(path) -> {name = Tensor}, {metadata}
// Nothing is restored when the Checkpoint is built, so the order in which the checkpoint and the
// loader are created does not matter; ckpt:resume() comes after both, before the first step (as
// in torchtitan's trainer). A restarted group (--max-restarts) treats resume = false as "auto".
// The session itself (options resolved, the output folder's lock, resume sequencing, hints) is
// host/launch/training_checkpoint.hpp; what resume does is decided in host/ckpt/resume_policy.hpp;
// this file only translates.
#include <filesystem>

#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_accelerator.hpp"
#include "bindings/wrap_checkpoint.hpp"
#include "bindings/wrap_ema.hpp"
#include "bindings/wrap_loader.hpp"
#include "bindings/wrap_optimizer.hpp"
#include "bindings/wrap_policy.hpp"
#include "bindings/wrap_scheduler.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/accel/accelerator.hpp"
#include "host/ckpt/resume_policy.hpp"
#include "host/data/batch_loader.hpp"
#include "host/io/safetensors.hpp"
#include "host/launch/training_checkpoint.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<launch::TrainingCheckpoint> {
  static constexpr LxType type{"Checkpoint", "lrhost.Checkpoint"};
};

namespace {

launch::TrainingCheckpoint& check_checkpoint(lua_State* L, int index) {
  return lx_check<launch::TrainingCheckpoint>(L, index);
}

void push_path_or_nil(lua_State* L, const std::optional<std::filesystem::path>& path) {
  if (path)
    lua_pushstring(L, path->c_str());
  else
    lua_pushnil(L);
}

// lr.checkpoint's `resume` option: true/false, "auto" or a checkpoint folder.
ckpt::ResumeRequest check_resume(lua_State* L, int value) {
  if (lua_type(L, value) == LUA_TBOOLEAN) {
    ckpt::ResumeRequest resume;
    resume.required = lua_toboolean(L, value) != 0;
    return resume;
  }
  if (lua_type(L, value) == LUA_TSTRING) return ckpt::parse_resume_text(lua_tostring(L, value));
  throw LxArgError(value, "must be true, false, \"auto\" or a checkpoint folder, got " + lx_typename(L, value));
}

using CheckpointOption = LxOptionRow<launch::TrainingCheckpointRequest>;
const std::array kCheckpointOptions{
    CheckpointOption{"policy", [](lua_State* L, int v, auto& r) { r.policy = lx_check_shared<policy::Policy>(L, v); }},
    CheckpointOption{"optimizer",
                     [](lua_State* L, int v, auto& r) { r.optimizer = lx_check_shared<optim::Optimizer>(L, v); }},
    CheckpointOption{"scheduler",
                     [](lua_State* L, int v, auto& r) {
                       auto handle = lx_check_shared<SchedulerHandle>(L, v);
                       r.scheduler = std::shared_ptr<optim::LrScheduler>(handle, &handle->scheduler);
                       r.scheduler_optimizer = handle->optimizer;
                     }},
    CheckpointOption{"loader",
                     [](lua_State* L, int v, auto& r) { r.loader = lx_check_shared<data::BatchLoader>(L, v); }},
    CheckpointOption{"acc", [](lua_State* L, int v, auto& r) { r.acc = lx_check_shared<accel::Accelerator>(L, v); }},
    CheckpointOption{"ema", [](lua_State* L, int v, auto& r) { r.ema = lx_check_shared<optim::WeightEma>(L, v); }},
    CheckpointOption{"keep_last", [](lua_State* L, int v, auto& r) { r.keep_last = lx_check_integer(L, v); }},
    CheckpointOption{"resume", [](lua_State* L, int v, auto& r) { r.resume = check_resume(L, v); }},
    CheckpointOption{"config", [](lua_State* L, int v, auto& r) { r.train_config = lx_to_json(L, v, 2, "config"); }},
    CheckpointOption{"total_steps", [](lua_State* L, int v, auto& r) { r.total_steps = lx_check_integer(L, v); }},
    CheckpointOption{"async", [](lua_State* L, int v, auto& r) { r.async = lx_check_boolean(L, v); }},
    CheckpointOption{"save_freq", [](lua_State* L, int v, auto& r) { r.save_freq = lx_check_integer(L, v); }},
    CheckpointOption{"save_checkpoint",
                     [](lua_State* L, int v, auto& r) { r.save_checkpoint = lx_check_boolean(L, v); }},
};

int w_checkpoint(lua_State* L) {
  return lx_guard(L, "lr.checkpoint", [&] {
    ensure_not_show_mode(L, "lr.checkpoint");
    launch::TrainingCheckpointRequest request;
    request.output_dir = lx_check_string(L, 1);
    auto& context = engine_context(L);
    request.train_config = context.resolved_config.value_or(nlohmann::json::object());
    if (!lua_isnoneornil(L, 2)) {
      lx_check_table(L, 2, "checkpoint options {policy =, optimizer =, scheduler =, loader =, acc =, ...}");
      lx_read_options(L, 2, kCheckpointOptions, request);
    }
    request.from_recipe_file = !context.request.recipe_path.empty();
    if (request.from_recipe_file)
      request.recipe =
          ckpt::take_recipe_snapshot(context.request.recipe_path, loaded_file_modules(L), context.request.overrides);
    lx_push(L, std::make_shared<launch::TrainingCheckpoint>(std::move(request)));
    return 1;
  });
}

int w_resume(lua_State* L) {
  return lx_guard(L, "Checkpoint:resume", [&] {
    lua_pushnumber(L, static_cast<double>(check_checkpoint(L, 1).resume()));
    return 1;
  });
}

int w_resume_step(lua_State* L) {
  return lx_guard(L, "Checkpoint:resume_step", [&] {
    lua_pushnumber(L, static_cast<double>(check_checkpoint(L, 1).resume_step()));
    return 1;
  });
}

int w_resumed_from(lua_State* L) {
  return lx_guard(L, "Checkpoint:resumed_from", [&] {
    push_path_or_nil(L, check_checkpoint(L, 1).resumed_from());
    return 1;
  });
}

int w_save(lua_State* L) {
  return lx_guard(L, "Checkpoint:save", [&] {
    auto& checkpoint = check_checkpoint(L, 1);
    lua_pushstring(L, checkpoint.save(lx_check_integer(L, 2)).c_str());
    return 1;
  });
}

// ckpt:is_save_step(step) -> whether the loop saves after `step` (save_freq, total_steps, save_checkpoint).
int w_is_save_step(lua_State* L) {
  return lx_guard(L, "Checkpoint:is_save_step", [&] {
    auto& checkpoint = check_checkpoint(L, 1);
    lua_pushboolean(L, checkpoint.is_save_step(lx_check_integer(L, 2)));
    return 1;
  });
}

int w_wait(lua_State* L) {
  return lx_guard(L, "Checkpoint:wait", [&] {
    check_checkpoint(L, 1).wait();
    return 0;
  });
}

int w_copied_bytes(lua_State* L) {
  return lx_guard(L, "Checkpoint:copied_bytes", [&] {
    lua_pushnumber(L, static_cast<double>(check_checkpoint(L, 1).copied_bytes()));
    return 1;
  });
}

// ckpt:resume_command() -> "lrhost resume /abs/output_dir", the command that continues this run.
int w_resume_command(lua_State* L) {
  return lx_guard(L, "Checkpoint:resume_command", [&] {
    lua_pushstring(L, check_checkpoint(L, 1).resume_command().c_str());
    return 1;
  });
}

int w_last_dir(lua_State* L) {
  return lx_guard(L, "Checkpoint:last_dir", [&] {
    push_path_or_nil(L, check_checkpoint(L, 1).last_dir());
    return 1;
  });
}

int w_dir(lua_State* L) {
  return lx_guard(L, "Checkpoint:dir", [&] {
    lua_pushstring(L, check_checkpoint(L, 1).checkpoints_dir().c_str());
    return 1;
  });
}

int w_loader_state(lua_State* L) {
  return lx_guard(L, "Checkpoint:loader_state", [&] {
    auto state = check_checkpoint(L, 1).restored_loader_state();
    if (state.is_null())
      lua_pushnil(L);
    else
      lx_push_json(L, state);
    return 1;
  });
}

int w_track_loader(lua_State* L) {
  return lx_guard(L, "Checkpoint:track_loader", [&] {
    auto& checkpoint = check_checkpoint(L, 1);
    checkpoint.track_loader(lx_check_shared<data::BatchLoader>(L, 2));
    return 0;
  });
}

int w_save_safetensors(lua_State* L) {
  return lx_guard(L, "lr.save_safetensors", [&] {
    std::string path = lx_check_string(L, 1);
    lx_check_table(L, 2, "table {name = Tensor}");
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) {
        lua_pop(L, 2);
        throw LxArgError(2, "tensor names must be strings");
      }
      std::string name = lua_tostring(L, -2);
      if (!lx_is<torch::Tensor>(L, -1)) {
        std::string got = lx_typename(L, -1);
        lua_pop(L, 2);
        throw LxArgError(2, "'" + name + "' is a " + got + ", expected Tensor");
      }
      tensors.emplace_back(name, check_tensor(L, lua_gettop(L)));
      lua_pop(L, 1);
    }
    std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::map<std::string, std::string> metadata;
    if (!lua_isnoneornil(L, 3)) {
      auto table = lx_to_json(L, 3, 3, "metadata");
      if (!table.is_object() && !(table.is_array() && table.empty()))
        throw LxArgError(3, "metadata must be a table {key = \"value\"}");
      for (const auto& [key, value] : table.items()) {
        if (!value.is_string()) throw LxArgError(3, "metadata value '" + key + "' must be a string");
        metadata[key] = value.get<std::string>();
      }
    }
    io::write_safetensors(path, tensors, metadata);
    return 0;
  });
}

int w_load_safetensors(lua_State* L) {
  return lx_guard(L, "lr.load_safetensors", [&] {
    auto content = io::read_safetensors(lx_check_string(L, 1));
    lua_createtable(L, 0, static_cast<int>(content.tensors.size()));
    for (auto& [name, tensor] : content.tensors) {
      push_tensor(L, tensor);
      lua_setfield(L, -2, name.c_str());
    }
    lua_createtable(L, 0, static_cast<int>(content.metadata.size()));
    for (const auto& [key, value] : content.metadata) {
      lua_pushstring(L, value.c_str());
      lua_setfield(L, -2, key.c_str());
    }
    return 2;
  });
}

}  // namespace

void open_checkpoint(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"resume", w_resume},
                              {"resume_step", w_resume_step},
                              {"resumed_from", w_resumed_from},
                              {"save", w_save},
                              {"is_save_step", w_is_save_step},
                              {"wait", w_wait},
                              {"copied_bytes", w_copied_bytes},
                              {"last_dir", w_last_dir},
                              {"resume_command", w_resume_command},
                              {"dir", w_dir},
                              {"loader_state", w_loader_state},
                              {"track_loader", w_track_loader},
                              {nullptr, nullptr}};
  lx_register_type(L, LxTraits<launch::TrainingCheckpoint>::type, methods);
  const luaL_Reg functions[] = {{"checkpoint", w_checkpoint},
                                {"save_safetensors", w_save_safetensors},
                                {"load_safetensors", w_load_safetensors},
                                {nullptr, nullptr}};
  lx_set_functions(L, module, functions);
}

}  // namespace lrhost::bindings
