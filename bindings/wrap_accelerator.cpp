// Lua binding of the Accelerator: lr.accelerator(cfg) builds one from the resolved config and
// the process's rank environment. Properties: rank, world_size, local_rank, device,
// is_main_process, effective_batch, gradient_accumulation_steps, sync_gradients,
// mixed_precision, strategy ("ddp", "fsdp zero-3 (dp_shard 2 x dp_replicate 1)", ...; for display),
// is_sharded (FSDP: parameters sharded), nonfinite ("error" | "skip"), max_skipped_steps, cuda_graph
// ("off", "warming up", "captured", "eager: <why>").
// Methods: prepare(policy, opt), backward(loss), clip_grad_norm(max),
// train_step(policy, opt, batch [, max_norm | {max_norm =, meter =, scheduler =, memory_stats =}])
// -> loss, parts, grad_norm, memory (one whole step; captured in a CUDA graph with
// accelerator.cuda_graph), autocast(fn, ...), wait_for_everyone(), all_reduce(x [, op]),
// broadcast(x [, root]), gather(x), gather_for_metrics(x [, n]), on_main(fn, ...), log(step, metrics [, meter]),
// log_text(tag, step, text), add_metrics_sink(sink), training_meter{...}, eval_progress{episodes =, log_lines =},
// reduce_metrics(metrics), to_device(tensor_or_batch), loss_scale(), skipped_steps(), skipped_nonfinite_steps(),
// guard_context{next_step =, checkpoint =} (what the divergence error names), ddp_stats(), memory_stats([opt]),
// fsdp_units(), device_memory(), reset_peak_memory(), loader(dataset, options)
// (this rank's shard of the batches, on the accelerator's device).
// Numbers and tensors are both accepted by the collectives; tensors are reduced in place and
// returned, numbers come back as numbers.
#include "bindings/wrap_accelerator.hpp"
#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_dataset.hpp"
#include "bindings/wrap_metrics.hpp"
#include "bindings/wrap_optimizer.hpp"
#include "bindings/wrap_policy.hpp"
#include "bindings/wrap_scheduler.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/accel/accelerator.hpp"
#include "host/launch/signals.hpp"
#include "host/launch/unused_run_dir.hpp"
#include "host/metrics/recipe_options.hpp"
#include "host/nn/autocast.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::bindings {

namespace {

accel::Accelerator& check_accelerator(lua_State* L, int index) {
  return lx_check<accel::Accelerator>(L, index);
}

dist::ReduceOp check_op(lua_State* L, int index) {
  if (lua_isnoneornil(L, index)) return dist::ReduceOp::sum;
  return lx_check_enum(L, index, dist::kReduceOpNames);
}

// A Lua number or a Tensor as a tensor on the accelerator's device; `was_number` tells which.
torch::Tensor collective_input(lua_State* L, int index, accel::Accelerator& acc, bool& was_number) {
  was_number = lua_type(L, index) == LUA_TNUMBER;
  if (was_number)
    return torch::full({1}, lua_tonumber(L, index), torch::TensorOptions().dtype(torch::kFloat64).device(acc.device()));
  if (!lx_is<torch::Tensor>(L, index))
    throw LxArgError(index, "expected Tensor or number, got " + lx_typename(L, index));
  auto& t = check_tensor(L, index);
  if (t.device() != acc.device())
    throw LxArgError(index, "tensor is on " + t.device().str() + ", the accelerator's device is " + acc.device().str() +
                                " (use acc:to_device)");
  return t;
}

int w_accelerator(lua_State* L) {
  return lx_guard(L, "lr.accelerator", [&] {
    ensure_not_show_mode(L, "lr.accelerator");
    launch::mark_run_started();  // the run folder is kept from here on, even if the run fails
    nlohmann::json config = lua_isnoneornil(L, 1) ? nlohmann::json::object() : lx_to_json(L, 1, 1, "config");
    auto acc = std::make_shared<accel::Accelerator>(dist::rank_env_from_environment(),
                                                    accel::AcceleratorConfig::from_recipe_config(config));
    spdlog::info("accelerator: rank {}/{} on {} ({}), mixed precision '{}', {}", acc->rank(), acc->world_size(),
                 acc->device().str(), acc->comm().backend_name(),
                 accel::kMixedPrecisionNames.name(acc->config().mixed_precision), acc->strategy());
    if (acc->config().batch_size > 0) spdlog::info("{}", acc->batch_semantics());
    lx_push(L, acc);
    return 1;
  });
}

// The accelerator's read-only properties (acc.rank, acc.strategy, ...): one row each, so the lookup
// and the error's list of names come from the same table.
struct AcceleratorProperty {
  const char* name;
  void (*push)(lua_State* L, accel::Accelerator& acc);
};

constexpr AcceleratorProperty kAcceleratorProperties[] = {
    {"rank", [](lua_State* L, accel::Accelerator& a) { lua_pushnumber(L, a.rank()); }},
    {"world_size", [](lua_State* L, accel::Accelerator& a) { lua_pushnumber(L, a.world_size()); }},
    {"local_rank", [](lua_State* L, accel::Accelerator& a) { lua_pushnumber(L, a.local_rank()); }},
    {"device", [](lua_State* L, accel::Accelerator& a) { lua_pushstring(L, a.device().str().c_str()); }},
    {"is_main_process", [](lua_State* L, accel::Accelerator& a) { lua_pushboolean(L, a.is_main_process()); }},
    {"effective_batch",
     [](lua_State* L, accel::Accelerator& a) { lua_pushnumber(L, static_cast<double>(a.effective_batch())); }},
    {"gradient_accumulation_steps",
     [](lua_State* L, accel::Accelerator& a) {
       lua_pushnumber(L, static_cast<double>(a.config().gradient_accumulation_steps));
     }},
    {"sync_gradients", [](lua_State* L, accel::Accelerator& a) { lua_pushboolean(L, a.sync_gradients()); }},
    {"mixed_precision",
     [](lua_State* L, accel::Accelerator& a) {
       lua_pushstring(L, accel::kMixedPrecisionNames.name(a.config().mixed_precision));
     }},
    {"strategy", [](lua_State* L, accel::Accelerator& a) { lua_pushstring(L, a.strategy().c_str()); }},
    {"is_sharded", [](lua_State* L, accel::Accelerator& a) { lua_pushboolean(L, a.is_sharded()); }},
    {"nonfinite",
     [](lua_State* L, accel::Accelerator& a) {
       lua_pushstring(L, accel::kNonfinitePolicyNames.name(a.config().nonfinite));
     }},
    {"max_skipped_steps",
     [](lua_State* L, accel::Accelerator& a) { lua_pushnumber(L, static_cast<double>(a.config().max_skipped_steps)); }},
    {"cuda_graph", [](lua_State* L, accel::Accelerator& a) { lua_pushstring(L, a.cuda_graph_status().c_str()); }},
};

int w_properties(lua_State* L) {
  return lx_guard(L, "Accelerator property", [&] {
    auto& acc = check_accelerator(L, 1);
    const std::string key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
    for (const auto& property : kAcceleratorProperties)
      if (key == property.name) {
        property.push(L, acc);
        return 1;
      }
    std::string names;
    for (const auto& property : kAcceleratorProperties) names += std::string(names.empty() ? "" : ", ") + property.name;
    throw util::ConfigError("Accelerator has no method or property '" + key + "' (properties: " + names + ")");
  });
}

int w_prepare(lua_State* L) {
  return lx_guard(L, "Accelerator:prepare", [&] {
    auto& acc = check_accelerator(L, 1);
    auto& policy = lx_check<policy::Policy>(L, 2);
    optim::Optimizer* optimizer = lua_isnoneornil(L, 3) ? nullptr : &lx_check<optim::Optimizer>(L, 3);
    acc.prepare(policy, optimizer);
    lua_settop(L, 3);
    return lua_isnil(L, 3) ? 1 : 2;  // policy[, optimizer], the same objects, now prepared
  });
}

int w_backward(lua_State* L) {
  return lx_guard(L, "Accelerator:backward", [&] {
    check_accelerator(L, 1).backward(check_tensor(L, 2));
    return 0;
  });
}

int w_clip_grad_norm(lua_State* L) {
  return lx_guard(L, "Accelerator:clip_grad_norm", [&] {
    auto norm = check_accelerator(L, 1).clip_grad_norm(lx_check_number(L, 2));
    if (norm)
      lua_pushnumber(L, *norm);
    else
      lua_pushnil(L);
    return 1;
  });
}

// The userdata of type T at `value`, field `key` of the options table at `index`, with the error
// naming what it must be.
template <class T>
T& object_option(lua_State* L, int value, const char* expected) {
  if (!lx_is<T>(L, value))
    throw LxArgError(value, std::string("expected ") + expected + ", got " + lx_typename(L, value));
  return lx_check<T>(L, value);
}

// train_step's options table {max_norm =, meter =, scheduler =, memory_stats =}.
using StepOption = LxOptionRow<accel::Accelerator::StepOptions>;
const std::array kStepOptions{
    StepOption{"max_norm", [](lua_State* L, int v, auto& o) { o.max_norm = lx_check_number(L, v); }},
    StepOption{"meter",
               [](lua_State* L, int v, auto& o) {
                 o.meter = &object_option<metrics::TrainingMeter>(L, v, "a TrainingMeter (acc:training_meter)");
               }},
    StepOption{"scheduler",
               [](lua_State* L, int v, auto& o) {
                 o.scheduler = &object_option<SchedulerHandle>(L, v, "a Scheduler (lr.optim.scheduler)").scheduler;
               }},
    StepOption{"memory_stats", [](lua_State* L, int v, auto& o) { o.measure_memory = lx_check_boolean(L, v); }},
};

// acc:train_step(policy, opt, batch [, max_norm | {max_norm =, meter =, scheduler =, memory_stats =}]):
// forward, backward, clipping (none when max_norm is nil or 0), optimizer step and zero_grad, then
// the scheduler's step, with the meter's phases marked (Accelerator::StepOptions); returns the loss,
// the loss parts, the gradient norm before clipping (nil without clipping) and, with memory_stats =
// true, memory_stats' table taken before zero_grad.
int w_train_step(lua_State* L) {
  return lx_guard(L, "Accelerator:train_step", [&] {
    auto& acc = check_accelerator(L, 1);
    auto& policy = lx_check<policy::Policy>(L, 2);
    auto& optimizer = lx_check<optim::Optimizer>(L, 3);
    auto batch = check_batch(L, 4);
    accel::Accelerator::StepOptions options;
    if (lua_istable(L, 5))
      lx_read_options(L, 5, kStepOptions, options);
    else if (!lua_isnoneornil(L, 5))
      options.max_norm = lx_check_number(L, 5);
    if (!(options.max_norm >= 0))
      throw LxArgError(5, "expected max_norm >= 0 (nil or 0: no clipping), got " + std::to_string(options.max_norm));
    auto result = acc.train_step(policy, optimizer, batch, options);
    push_tensor(L, result.loss);
    lua_createtable(L, 0, static_cast<int>(result.parts.size()));
    for (auto& [name, tensor] : result.parts) {
      push_tensor(L, tensor);
      lua_setfield(L, -2, name.c_str());
    }
    if (result.grad_norm)
      lua_pushnumber(L, *result.grad_norm);
    else
      lua_pushnil(L);
    if (result.memory)
      lx_push_json(L, nlohmann::json(*result.memory));
    else
      lua_pushnil(L);
    return 4;
  });
}

// acc:autocast(fn, ...) runs fn under the accelerator's mixed precision.
int w_autocast(lua_State* L) {
  int status = 0;
  lx_guard(L, "Accelerator:autocast", [&] {
    auto& acc = check_accelerator(L, 1);
    lx_check_function(L, 2);
    nn::AutocastGuard guard(acc.autocast_spec());
    status = lua_pcall(L, lua_gettop(L) - 2, LUA_MULTRET, 0);
    return 0;
  });
  if (status != 0) return lua_error(L);
  return lua_gettop(L) - 1;
}

int w_wait_for_everyone(lua_State* L) {
  return lx_guard(L, "Accelerator:wait_for_everyone", [&] {
    check_accelerator(L, 1).wait_for_everyone();
    return 0;
  });
}

// acc:stop_requested() -> false, or the agreed signal's name ("SIGTERM"); see Accelerator::stop_requested
// (its first call arms the recording handlers).
int w_stop_requested(lua_State* L) {
  return lx_guard(L, "Accelerator:stop_requested", [&] {
    int signal = check_accelerator(L, 1).stop_requested();
    if (signal == 0)
      lua_pushboolean(L, 0);
    else
      lua_pushstring(L, launch::signal_name(signal).c_str());
    return 1;
  });
}

int w_all_reduce(lua_State* L) {
  return lx_guard(L, "Accelerator:all_reduce", [&] {
    auto& acc = check_accelerator(L, 1);
    bool was_number = false;
    auto t = collective_input(L, 2, acc, was_number);
    acc.comm().all_reduce(t, check_op(L, 3));
    if (was_number)
      lua_pushnumber(L, t.item<double>());
    else
      lua_pushvalue(L, 2);
    return 1;
  });
}

int w_broadcast(lua_State* L) {
  return lx_guard(L, "Accelerator:broadcast", [&] {
    auto& acc = check_accelerator(L, 1);
    bool was_number = false;
    auto t = collective_input(L, 2, acc, was_number);
    acc.comm().broadcast(t, static_cast<int>(lx_opt_integer(L, 3).value_or(0)));
    if (was_number)
      lua_pushnumber(L, t.item<double>());
    else
      lua_pushvalue(L, 2);
    return 1;
  });
}

// Gathers along dim 0 from every rank (rank order); numbers give a Lua list.
torch::Tensor gather(lua_State* L, accel::Accelerator& acc, bool& was_number) {
  auto t = collective_input(L, 2, acc, was_number);
  auto input = t.dim() == 0 ? t.reshape({1}) : t.contiguous();
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape[0] *= acc.world_size();
  auto out = torch::empty(shape, input.options());
  acc.comm().all_gather_into(out, input);
  return out;
}

void push_gathered(lua_State* L, const torch::Tensor& out, bool was_number) {
  if (!was_number) {
    push_tensor(L, out);
    return;
  }
  auto values = out.cpu();
  lua_createtable(L, static_cast<int>(values.numel()), 0);
  for (int64_t i = 0; i < values.numel(); ++i) {
    lua_pushnumber(L, values[i].item<double>());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

int w_gather(lua_State* L) {
  return lx_guard(L, "Accelerator:gather", [&] {
    bool was_number = false;
    auto out = gather(L, check_accelerator(L, 1), was_number);  // sets was_number: call before using it
    push_gathered(L, out, was_number);
    return 1;
  });
}

// Like gather, then drops the samples beyond `n` (the padding added to even out the last batch).
int w_gather_for_metrics(lua_State* L) {
  return lx_guard(L, "Accelerator:gather_for_metrics", [&] {
    bool was_number = false;
    auto out = gather(L, check_accelerator(L, 1), was_number);
    if (auto n = lx_opt_integer(L, 3)) {
      if (*n < 0) throw LxArgError(3, "n must be >= 0");
      out = out.narrow(0, 0, std::min<int64_t>(*n, out.size(0)));
    }
    push_gathered(L, out, was_number);
    return 1;
  });
}

// acc:on_main(fn, ...): runs fn on the main process only; collectives inside raise.
int w_on_main(lua_State* L) {
  int status = 0;
  bool ran = false;
  lx_guard(L, "Accelerator:on_main", [&] {
    auto& acc = check_accelerator(L, 1);
    lx_check_function(L, 2);
    if (!acc.is_main_process()) return 0;
    ran = true;
    acc.enter_main_only();
    status = lua_pcall(L, lua_gettop(L) - 2, LUA_MULTRET, 0);
    acc.leave_main_only();
    return 0;
  });
  if (status != 0) return lua_error(L);
  return ran ? lua_gettop(L) - 1 : 0;
}

std::map<std::string, double> check_metrics(lua_State* L, int index) {
  lx_check_table(L, index, "table of name = number or Tensor");
  std::map<std::string, double> metrics;
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    std::string key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (key.empty()) {
      lua_pop(L, 2);
      throw LxArgError(index, "metric names must be strings");
    }
    if (lua_type(L, -1) == LUA_TNUMBER) {
      metrics[key] = lua_tonumber(L, -1);
    } else if (lx_is<torch::Tensor>(L, -1)) {
      auto& t = check_tensor(L, lua_gettop(L));
      if (t.numel() != 1) {
        lua_pop(L, 2);
        throw LxArgError(index, "metric '" + key + "' must be a number or a one-element tensor");
      }
      metrics[key] = t.item<double>();
    } else {
      std::string got = lx_typename(L, -1);
      lua_pop(L, 2);
      throw LxArgError(index, "metric '" + key + "' is a " + got + ", expected number or Tensor");
    }
    lua_pop(L, 1);
  }
  return metrics;
}

void push_metrics(lua_State* L, const std::map<std::string, double>& metrics) {
  lua_createtable(L, 0, static_cast<int>(metrics.size()));
  for (const auto& [key, value] : metrics) {
    lua_pushnumber(L, value);
    lua_setfield(L, -2, key.c_str());
  }
}

int w_reduce_metrics(lua_State* L) {
  return lx_guard(L, "Accelerator:reduce_metrics", [&] {
    auto& acc = check_accelerator(L, 1);
    push_metrics(L, acc.reduce_metrics(check_metrics(L, 2)));
    return 1;
  });
}

// acc:log(step, metrics [, meter]): reduced across ranks (collective: every rank calls it; rules in
// host/metrics/metric_reduction.hpp), then on the main process logged and written to every metric
// sink. With a TrainingMeter, its window (phase timings, step_s, samples_per_s) joins the metrics,
// the log line starts with the progress, and the status line shows the loss.
int w_log(lua_State* L) {
  return lx_guard(L, "Accelerator:log", [&] {
    auto& acc = check_accelerator(L, 1);
    int64_t step = lx_check_integer(L, 2);
    auto metrics = check_metrics(L, 3);
    metrics::TrainingMeter* meter = lua_isnoneornil(L, 4) ? nullptr : &lx_check<metrics::TrainingMeter>(L, 4);
    push_metrics(L, acc.log(step, std::move(metrics), meter));
    return 1;
  });
}

// acc:log_text(tag, step, text_or_table): a text record for the sinks that keep text (TensorBoard),
// main process only; a table (the resolved config, say) is written as indented JSON.
int w_log_text(lua_State* L) {
  return lx_guard(L, "Accelerator:log_text", [&] {
    auto& acc = check_accelerator(L, 1);
    std::string tag = lx_check_string(L, 2);
    int64_t step = lx_check_integer(L, 3);
    std::string text = lua_istable(L, 4) ? lx_to_json(L, 4, 4, "log_text").dump(2) : lx_check_string(L, 4);
    if (acc.is_main_process()) acc.metrics_log().record_text(tag, step, text);
    return 0;
  });
}

// acc:add_metrics_sink(sink): acc:log writes every later record to it (main process only).
int w_add_metrics_sink(lua_State* L) {
  return lx_guard(L, "Accelerator:add_metrics_sink", [&] {
    auto& acc = check_accelerator(L, 1);
    acc.metrics_log().add_sink(lx_check_shared<metrics::MetricsSink>(L, 2));
    return 0;
  });
}

// acc:training_meter{total_steps = N, first_step = k, samples_per_step = b, flops_per_sample = f}:
// phase timings, progress and (with f, policy:training_flops_per_sample()) tflops and mfu of this
// rank's loop (Accelerator::training_meter); rank 0 draws the status line on a terminal.
int w_training_meter(lua_State* L) {
  return lx_guard(L, "Accelerator:training_meter", [&] {
    auto& acc = check_accelerator(L, 1);
    lx_check_table(L, 2, "options {total_steps =, first_step =, samples_per_step =, flops_per_sample =}");
    auto options = metrics::read_training_meter_options(lx_options(L, 2, 2, "training_meter"), "acc:training_meter");
    lx_push(L, acc.training_meter(std::move(options)));
    return 1;
  });
}

// acc:eval_progress{episodes = N, log_lines = false}: progress of a closed-loop evaluation of N
// episodes dealt to the ranks (wrap_metrics.cpp); rank 0 draws the status line on a terminal, and
// off one logs each tenth with log_lines (`lrhost eval`; not wanted between a training run's log lines).
int w_eval_progress(lua_State* L) {
  return lx_guard(L, "Accelerator:eval_progress", [&] {
    auto& acc = check_accelerator(L, 1);
    lx_check_table(L, 2, "options {episodes =, log_lines =}");
    lx_push(L, acc.eval_progress(
                   metrics::read_eval_progress_options(lx_options(L, 2, 2, "eval_progress"), "acc:eval_progress")));
    return 1;
  });
}

// acc:to_device(tensor) or acc:to_device(batch table): moves tensors to the accelerator's device.
int w_to_device(lua_State* L) {
  return lx_guard(L, "Accelerator:to_device", [&] {
    auto& acc = check_accelerator(L, 1);
    if (lx_is<torch::Tensor>(L, 2)) {
      push_tensor(L, check_tensor(L, 2).to(acc.device(), /*non_blocking=*/true));
      return 1;
    }
    lx_check_table(L, 2, "Tensor or batch table");
    lua_newtable(L);
    int out = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {
      lua_pushvalue(L, -2);  // key
      if (lx_is<torch::Tensor>(L, -2))
        push_tensor(L, check_tensor(L, lua_gettop(L) - 1).to(acc.device(), true));
      else
        lua_pushvalue(L, -2);
      lua_settable(L, out);
      lua_pop(L, 1);
    }
    return 1;
  });
}

int w_loss_scale(lua_State* L) {
  return lx_guard(L, "Accelerator:loss_scale", [&] {
    auto scale = check_accelerator(L, 1).loss_scale();
    if (scale)
      lua_pushnumber(L, *scale);
    else
      lua_pushnil(L);
    return 1;
  });
}

int w_skipped_steps(lua_State* L) {
  return lx_guard(L, "Accelerator:skipped_steps", [&] {
    lua_pushnumber(L, static_cast<double>(check_accelerator(L, 1).skipped_steps()));
    return 1;
  });
}

int w_skipped_nonfinite_steps(lua_State* L) {
  return lx_guard(L, "Accelerator:skipped_nonfinite_steps", [&] {
    lua_pushnumber(L, static_cast<double>(check_accelerator(L, 1).skipped_nonfinite_steps()));
    return 1;
  });
}

// acc:guard_context{next_step = n, checkpoint = dir}: the recipe's number for the next optimizer
// step (between steps; a resumed run starts at resume_step + 1) and the last checkpoint saved, both
// named by the error of a diverged step. Either key may be left out.
int w_guard_context(lua_State* L) {
  return lx_guard(L, "Accelerator:guard_context", [&] {
    auto& acc = check_accelerator(L, 1);
    lx_check_table(L, 2, "table {next_step =, checkpoint =}");
    acc.set_guard_context(lx_options(L, 2, 2, "guard_context"));
    return 0;
  });
}

int w_ddp_stats(lua_State* L) {
  return lx_guard(L, "Accelerator:ddp_stats", [&] {
    auto stats = check_accelerator(L, 1).ddp_stats();
    if (!stats) {
      lua_pushnil(L);
      return 1;
    }
    lx_push_json(L, nlohmann::json(*stats));
    return 1;
  });
}

// acc:memory_stats([optimizer]) -> {parameter_bytes, gradient_bytes, optimizer_bytes}: this rank's
// persistent training memory (FSDP: shards), the figures `lrhost show` plans.
int w_memory_stats(lua_State* L) {
  return lx_guard(L, "Accelerator:memory_stats", [&] {
    const optim::Optimizer* optimizer = lua_isnoneornil(L, 2) ? nullptr : &lx_check<optim::Optimizer>(L, 2);
    lx_push_json(L, nlohmann::json(check_accelerator(L, 1).memory_stats(optimizer)));
    return 1;
  });
}

// acc:device_memory() -> {allocated, peak, reserved} bytes of this rank's GPU (nil on the CPU);
// acc:reset_peak_memory() starts a new peak.
int w_device_memory(lua_State* L) {
  return lx_guard(L, "Accelerator:device_memory", [&] {
    auto memory = check_accelerator(L, 1).device_memory();
    if (!memory) {
      lua_pushnil(L);
      return 1;
    }
    lx_push_json(L, nlohmann::json(*memory));
    return 1;
  });
}

int w_reset_peak_memory(lua_State* L) {
  return lx_guard(L, "Accelerator:reset_peak_memory", [&] {
    check_accelerator(L, 1).reset_peak_memory();
    return 0;
  });
}

// acc:fsdp_units() -> list of {name, type, frozen, dtype, numel, shard_numel}, one per parameter
// group of a wrap unit (nil under DDP).
int w_fsdp_units(lua_State* L) {
  return lx_guard(L, "Accelerator:fsdp_units", [&] {
    auto* fsdp = check_accelerator(L, 1).fsdp();
    if (fsdp == nullptr) {
      lua_pushnil(L);
      return 1;
    }
    const auto& units = fsdp->view().units;
    lua_createtable(L, static_cast<int>(units.size()), 0);
    for (std::size_t i = 0; i < units.size(); ++i) {
      lua_createtable(L, 0, 6);
      lua_pushstring(L, units[i].name.c_str());
      lua_setfield(L, -2, "name");
      lua_pushstring(L, units[i].module_type.c_str());
      lua_setfield(L, -2, "type");
      lua_pushboolean(L, units[i].frozen);
      lua_setfield(L, -2, "frozen");
      lua_pushstring(L, units[i].params.empty() ? "" : util::dtype_name(units[i].params.front().dtype).c_str());
      lua_setfield(L, -2, "dtype");
      lua_pushnumber(L, static_cast<double>(units[i].numel()));
      lua_setfield(L, -2, "numel");
      lua_pushnumber(L, static_cast<double>(units[i].shard_numel()));
      lua_setfield(L, -2, "shard_numel");
      lua_rawseti(L, -2, static_cast<int>(i) + 1);
    }
    return 1;
  });
}

int w_loader(lua_State* L) {
  return lx_guard(L, "Accelerator:loader", [&] {
    auto& acc = check_accelerator(L, 1);
    push_loader(L, lx_check_shared<data::FrameSource>(L, 2), 3, acc.rank(), acc.world_size(), acc.device());
    return 1;
  });
}

}  // namespace

void open_accelerator(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"prepare", w_prepare},
                              {"backward", w_backward},
                              {"clip_grad_norm", w_clip_grad_norm},
                              {"train_step", w_train_step},
                              {"autocast", w_autocast},
                              {"wait_for_everyone", w_wait_for_everyone},
                              {"stop_requested", w_stop_requested},
                              {"all_reduce", w_all_reduce},
                              {"broadcast", w_broadcast},
                              {"gather", w_gather},
                              {"gather_for_metrics", w_gather_for_metrics},
                              {"on_main", w_on_main},
                              {"log", w_log},
                              {"log_text", w_log_text},
                              {"add_metrics_sink", w_add_metrics_sink},
                              {"training_meter", w_training_meter},
                              {"eval_progress", w_eval_progress},
                              {"reduce_metrics", w_reduce_metrics},
                              {"to_device", w_to_device},
                              {"loss_scale", w_loss_scale},
                              {"skipped_steps", w_skipped_steps},
                              {"skipped_nonfinite_steps", w_skipped_nonfinite_steps},
                              {"guard_context", w_guard_context},
                              {"ddp_stats", w_ddp_stats},
                              {"memory_stats", w_memory_stats},
                              {"fsdp_units", w_fsdp_units},
                              {"device_memory", w_device_memory},
                              {"reset_peak_memory", w_reset_peak_memory},
                              {"loader", w_loader},
                              {nullptr, nullptr}};
  lx_register_type(L, LxTraits<accel::Accelerator>::type, methods, w_properties);
  lua_pushcfunction(L, w_accelerator);
  lua_setfield(L, module, "accelerator");
}

}  // namespace lrhost::bindings
