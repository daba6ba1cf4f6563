// Lua binding of training checkpoints and raw safetensors files:
//   lr.checkpoint(output_dir, {policy =, optimizer =, scheduler =, loader =, acc =, keep_last =,
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
// What resume does (the environment, setting old checkpoints aside, which checkpoint, call order)
// is decided in host/ckpt/resume_policy.hpp; this file only translates.
#include <filesystem>

#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_accelerator.hpp"
#include "bindings/wrap_checkpoint.hpp"
#include "bindings/wrap_loader.hpp"
#include "bindings/wrap_optimizer.hpp"
#include "bindings/wrap_policy.hpp"
#include "bindings/wrap_scheduler.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/accel/accelerator.hpp"
#include "host/ckpt/checkpoint_manager.hpp"
#include "host/ckpt/resume_policy.hpp"
#include "host/ckpt/training_state.hpp"
#include "host/data/batch_loader.hpp"
#include "host/data/data_options.hpp"
#include "host/io/safetensors.hpp"
#include "host/launch/interrupted_checkpoints.hpp"
#include "host/launch/output_dir_lock.hpp"
#include "host/launch/resume_hint.hpp"
#include "host/util/log.hpp"

namespace lrhost::bindings {

struct CheckpointHandle {
  // The job's global rank 0 owns output_dir while this checkpoint may write there
  // (launch/output_dir_lock.hpp); declared first, so it is released after the manager's last write.
  std::shared_ptr<const launch::RunDirLock> output_dir_lock;
  std::unique_ptr<ckpt::CheckpointManager> manager;
  std::shared_ptr<policy::Policy> policy;
  std::shared_ptr<optim::Optimizer> optimizer;
  std::shared_ptr<SchedulerHandle> scheduler;
  std::shared_ptr<data::BatchLoader> loader;
  std::shared_ptr<accel::Accelerator> acc;
  std::optional<ckpt::TrainingStep> restored;
  std::optional<std::filesystem::path> restored_dir;
  // What resume() does and the order of resume() and save() (resume_policy.hpp).
  ckpt::ResumeSequence sequence{ckpt::ResumePlan{}};
  // The run's last step (0: unknown) and where it came from, to refuse resuming past it.
  int64_t total_steps = 0;
  std::string total_steps_source;
  // `lrhost resume` can continue this run (a recipe snapshot and a `resume` config key), and this
  // is the process that tells the user how (rank 0): the interrupt hint is recorded (resume_hint.hpp).
  bool records_resume_hint = false;

  ckpt::CheckpointTargets targets() {
    ckpt::CheckpointTargets t;
    t.policy = policy.get();
    t.optimizer = optimizer.get();
    if (scheduler) {
      t.scheduler = &scheduler->scheduler;
      if (!t.optimizer) t.optimizer = scheduler->optimizer.get();
    }
    if (loader) {
      auto held = loader;
      t.sampler_state = [held] { return data::loader_state_to_json(held->position(), held->sampler().options()); };
    }
    if (acc) t.fsdp = acc->fsdp();
    return t;
  }

  void check_loader() const {
    if (!loader || !restored) return;
    ckpt::check_loader_matches(data::loader_state_to_json(loader->position(), loader->sampler().options()),
                               restored->sampler);
  }
};

template <>
struct LxTraits<CheckpointHandle> {
  static constexpr LxType type{"Checkpoint", "lrhost.Checkpoint"};
};

namespace {

CheckpointHandle& check_checkpoint(lua_State* L, int index) {
  return lx_check<CheckpointHandle>(L, index);
}

const nlohmann::json* find_path(const nlohmann::json& config, std::initializer_list<const char*> path) {
  const nlohmann::json* node = &config;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
  }
  return node;
}

int64_t integer_at(const nlohmann::json& config, std::initializer_list<const char*> path, int64_t fallback) {
  const nlohmann::json* node = find_path(config, path);
  return node && node->is_number_integer() ? node->get<int64_t>() : fallback;
}

int w_checkpoint(lua_State* L) {
  return lx_guard(L, "lr.checkpoint", [&] {
    ensure_not_show_mode(L, "lr.checkpoint");
    std::string output_dir = lx_check_string(L, 1);
    if (output_dir.empty()) throw LxArgError(1, "the output folder must not be empty");
    auto handle = std::make_shared<CheckpointHandle>();
    ckpt::ResumeRequest resume;
    ckpt::CheckpointOptions options;
    options.output_dir = output_dir;
    std::optional<nlohmann::json> config;
    std::optional<int64_t> save_freq;
    std::optional<bool> save_checkpoint;
    if (!lua_isnoneornil(L, 2)) {
      lx_check_table(L, 2, "checkpoint options {policy =, optimizer =, scheduler =, loader =, acc =, ...}");
      lua_pushnil(L);
      while (lua_next(L, 2) != 0) {
        int value = lua_gettop(L);
        std::string key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
        try {
          if (key == "policy")
            handle->policy = lx_check_shared<policy::Policy>(L, value);
          else if (key == "optimizer")
            handle->optimizer = lx_check_shared<optim::Optimizer>(L, value);
          else if (key == "scheduler")
            handle->scheduler = lx_check_shared<SchedulerHandle>(L, value);
          else if (key == "loader")
            handle->loader = lx_check_shared<data::BatchLoader>(L, value);
          else if (key == "acc")
            handle->acc = lx_check_shared<accel::Accelerator>(L, value);
          else if (key == "keep_last")
            options.keep_last = lx_check_integer(L, value);
          else if (key == "total_steps")
            options.total_steps = lx_check_integer(L, value);
          else if (key == "async")
            options.async = lx_check_boolean(L, value);
          else if (key == "save_freq")
            save_freq = lx_check_integer(L, value);
          else if (key == "save_checkpoint")
            save_checkpoint = lx_check_boolean(L, value);
          else if (key == "config")
            config = lx_to_json(L, value, 2, "config");
          else if (key == "resume") {
            if (lua_type(L, value) == LUA_TBOOLEAN) {
              resume.required = lua_toboolean(L, value) != 0;
            } else if (lua_type(L, value) == LUA_TSTRING) {
              try {
                resume = ckpt::parse_resume_text(lua_tostring(L, value));
              } catch (const util::ConfigError& error) {
                throw LxArgError(2, error.what());
              }
            } else
              throw LxArgError(
                  2, "resume must be true, false, \"auto\" or a checkpoint folder, got " + lx_typename(L, value));
          } else {
            lua_pop(L, 2);
            throw LxArgError(2, "unknown option '" + key +
                                    "' (valid: policy, optimizer, scheduler, loader, acc, keep_last, "
                                    "resume, config, total_steps, async, save_freq, save_checkpoint)");
          }
        } catch (const LxArgError& error) {
          // Checks of a field name the field, not its temporary stack slot.
          throw LxArgError(2, error.index() == 2 ? error.what() : key + ": " + error.what());
        }
        lua_pop(L, 1);
      }
    }
    if (!handle->policy) throw LxArgError(2, "'policy' is required (the Policy to save)");
    if (options.keep_last < 0) throw LxArgError(2, "keep_last must be >= 0 (0 keeps every checkpoint)");
    if (handle->scheduler && handle->optimizer && handle->scheduler->optimizer != handle->optimizer)
      throw LxArgError(2, "the scheduler drives a different optimizer than 'optimizer'");
    auto& context = engine_context(L);
    options.train_config = config ? *config : context.resolved_config.value_or(nlohmann::json::object());
    handle->total_steps_source = options.total_steps != 0 ? "lr.checkpoint's total_steps" : "config key 'steps'";
    if (options.total_steps == 0) options.total_steps = integer_at(options.train_config, {"steps"}, 0);
    handle->total_steps = options.total_steps;
    options.save_freq = save_freq.value_or(integer_at(options.train_config, {"save_freq"}, 0));
    if (options.save_freq < 0) throw LxArgError(2, "save_freq must be >= 0 (0 saves only at total_steps)");
    const nlohmann::json* save_key = find_path(options.train_config, {"save_checkpoint"});
    options.save_checkpoint = save_checkpoint.value_or(!(save_key && save_key->is_boolean()) || save_key->get<bool>());
    handle->records_resume_hint = options.train_config.contains("resume") && !context.request.recipe_path.empty() &&
                                  (!handle->acc || handle->acc->is_main_process());
    if (!context.request.recipe_path.empty())
      options.recipe =
          ckpt::take_recipe_snapshot(context.request.recipe_path, loaded_file_modules(L), context.request.overrides);
    if (handle->acc) {
      options.batch_size = handle->acc->config().batch_size;
      options.grad_accum_steps = handle->acc->config().gradient_accumulation_steps;
    }
    if (options.batch_size == 0 && handle->loader) options.batch_size = handle->loader->sampler().options().batch_size;
    if (options.batch_size == 0) options.batch_size = integer_at(options.train_config, {"batch_size"}, 0);
    // The layout as the accelerator resolved it (-1 entries filled in); DDP is dp_shard 1.
    options.dp_replicate = handle->acc ? handle->acc->config().dp_replicate
                                       : integer_at(options.train_config, {"parallelism", "dp_replicate"}, 1);
    options.dp_shard =
        handle->acc ? handle->acc->shard_size() : integer_at(options.train_config, {"parallelism", "dp_shard"}, 1);
    dist::Comm* comm = handle->acc ? &handle->acc->comm() : nullptr;
    // The process's rank, not the accelerator's: a checkpoint without one still runs on every rank.
    if (util::rank_from_environment() == 0) handle->output_dir_lock = launch::claim_output_dir(options.output_dir);
    handle->manager = std::make_unique<ckpt::CheckpointManager>(options, comm);

    handle->sequence =
        ckpt::ResumeSequence(ckpt::plan_resume(resume, ckpt::ResumeEnvironment::from_process(), *handle->manager));
    lx_push(L, handle);
    return 1;
  });
}

int w_resume(lua_State* L) {
  return lx_guard(L, "Checkpoint:resume", [&] {
    auto& h = check_checkpoint(L, 1);
    h.sequence.begin_resume();
    if (auto dir = ckpt::choose_resume_point(*h.manager, h.sequence.plan(), h.total_steps, h.total_steps_source)) {
      // A folder naming one checkpoint must restore exactly that one; otherwise damaged data makes
      // resume fall back to the next older sound checkpoint.
      const bool fall_back = !h.sequence.plan().from || !ckpt::names_one_checkpoint(*h.sequence.plan().from);
      auto resumed = h.manager->resume(*dir, h.targets(), fall_back);
      h.restored = resumed.step;
      h.restored_dir = resumed.dir;
      if (h.records_resume_hint) {
        launch::note_resumable(h.manager->checkpoints_dir().parent_path());
        launch::note_checkpoints_dir(h.manager->checkpoints_dir());
      }
      if (h.loader && !h.restored->sampler.is_null())
        h.loader->seek(data::loader_position_from_json(h.restored->sampler, h.loader->sampler().options(),
                                                       dir->string() + " training_step.json sampler"));
    }
    lua_pushnumber(L, static_cast<double>(h.restored ? h.restored->step : 0));
    return 1;
  });
}

int w_resume_step(lua_State* L) {
  return lx_guard(L, "Checkpoint:resume_step", [&] {
    auto& h = check_checkpoint(L, 1);
    lua_pushnumber(L, static_cast<double>(h.restored ? h.restored->step : 0));
    return 1;
  });
}

int w_resumed_from(lua_State* L) {
  return lx_guard(L, "Checkpoint:resumed_from", [&] {
    auto& h = check_checkpoint(L, 1);
    if (h.restored_dir)
      lua_pushstring(L, h.restored_dir->c_str());
    else
      lua_pushnil(L);
    return 1;
  });
}

int w_save(lua_State* L) {
  return lx_guard(L, "Checkpoint:save", [&] {
    auto& h = check_checkpoint(L, 1);
    int64_t step = lx_check_integer(L, 2);
    if (step < 0) throw LxArgError(2, "step must be >= 0");
    h.sequence.check_save(step);
    auto dir = h.manager->save(step, h.targets());
    if (h.records_resume_hint) {
      launch::note_resumable(h.manager->checkpoints_dir().parent_path());
      launch::note_checkpoints_dir(h.manager->checkpoints_dir());
    }
    lua_pushstring(L, dir.c_str());
    return 1;
  });
}

// ckpt:is_save_step(step) -> whether the loop saves after `step` (save_freq, total_steps, save_checkpoint).
int w_is_save_step(lua_State* L) {
  return lx_guard(L, "Checkpoint:is_save_step", [&] {
    lua_pushboolean(L, check_checkpoint(L, 1).manager->is_save_step(lx_check_integer(L, 2)));
    return 1;
  });
}

int w_wait(lua_State* L) {
  return lx_guard(L, "Checkpoint:wait", [&] {
    check_checkpoint(L, 1).manager->wait();
    return 0;
  });
}

int w_copied_bytes(lua_State* L) {
  return lx_guard(L, "Checkpoint:copied_bytes", [&] {
    lua_pushnumber(L, static_cast<double>(check_checkpoint(L, 1).manager->copied_bytes()));
    return 1;
  });
}

// ckpt:resume_command() -> "lrhost resume /abs/output_dir", the command that continues this run.
int w_resume_command(lua_State* L) {
  return lx_guard(L, "Checkpoint:resume_command", [&] {
    auto& h = check_checkpoint(L, 1);
    lua_pushstring(L, launch::resume_command(h.manager->checkpoints_dir().parent_path()).c_str());
    return 1;
  });
}

int w_last_dir(lua_State* L) {
  return lx_guard(L, "Checkpoint:last_dir", [&] {
    auto& h = check_checkpoint(L, 1);
    auto scan = ckpt::scan_checkpoints(h.manager->checkpoints_dir(), false);
    if (scan.last_complete)
      lua_pushstring(L, scan.last_complete->c_str());
    else
      lua_pushnil(L);
    return 1;
  });
}

int w_dir(lua_State* L) {
  return lx_guard(L, "Checkpoint:dir", [&] {
    lua_pushstring(L, check_checkpoint(L, 1).manager->checkpoints_dir().c_str());
    return 1;
  });
}

int w_loader_state(lua_State* L) {
  return lx_guard(L, "Checkpoint:loader_state", [&] {
    auto& h = check_checkpoint(L, 1);
    if (h.restored && !h.restored->sampler.is_null())
      lx_push_json(L, h.restored->sampler);
    else
      lua_pushnil(L);
    return 1;
  });
}

int w_track_loader(lua_State* L) {
  return lx_guard(L, "Checkpoint:track_loader", [&] {
    auto& h = check_checkpoint(L, 1);
    h.loader = lx_check_shared<data::BatchLoader>(L, 2);
    h.check_loader();
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
  lx_register_type(L, LxTraits<CheckpointHandle>::type, methods);
  const luaL_Reg functions[] = {{"checkpoint", w_checkpoint},
                                {"save_safetensors", w_save_safetensors},
                                {"load_safetensors", w_load_safetensors},
                                {nullptr, nullptr}};
  lx_set_functions(L, module, functions);
}

}  // namespace lrhost::bindings
