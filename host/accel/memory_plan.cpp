// Per-rank memory under each data-parallel strategy, from the unit layouts; see memory_plan.hpp.
#include "host/accel/memory_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "host/accel/accelerator.hpp"
#include "host/dist/fsdp/wrap_units.hpp"
#include "host/optim/scheduler.hpp"
#include "host/policy/policy_spec.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::accel {
namespace {

// Optimizer state tensors per parameter element, each in the parameter's dtype: Adam's two moments
// (three with amsgrad's running maximum), SGD's momentum buffer.
int64_t optimizer_moments(optim::OptimizerKind kind, const nlohmann::json& options) {
  if (optim::is_adam_family(kind))
    return options.contains("amsgrad") && options["amsgrad"].is_boolean() && options["amsgrad"].get<bool>() ? 3 : 2;
  double momentum =
      options.contains("momentum") && options["momentum"].is_number() ? options["momentum"].get<double>() : 0;
  return momentum > 0 ? 1 : 0;
}

int64_t element_bytes(c10::ScalarType dtype) {
  return static_cast<int64_t>(c10::elementSize(dtype));
}

// Bytes of a group's padded shard (per rank) and of its full parameters.
int64_t shard_bytes(const dist::fsdp::UnitLayout& unit) {
  int64_t bytes = 0;
  for (const auto& p : unit.params) bytes += p.shard_numel() * element_bytes(p.dtype);
  return bytes;
}

// One line on the policy's scheduler preset as the recipes apply it (total_steps = config.steps).
std::string describe_schedule(const nlohmann::json& scheduler_preset, const nlohmann::json& config) {
  auto preset = scheduler_preset;
  if (!preset.is_object()) return {};
  const int64_t steps =
      config.contains("steps") && config["steps"].is_number_integer() ? config["steps"].get<int64_t>() : 0;
  if (steps > 0) preset["total_steps"] = steps;
  auto spec = optim::ScheduleSpec::from_json(preset);
  std::ostringstream out;
  out << spec.kind;
  if (spec.kind == "cosine_decay_with_warmup") {
    auto [warmup, decay] = spec.effective_warmup_and_decay();
    out << ": warmup " << warmup << " steps, cosine decay over " << decay << " steps to " << spec.decay_lr_ratio
        << " x lr";
    if (decay != spec.decay_steps)
      out << " (steps = " << steps << " < decay_steps = " << spec.decay_steps << ": warmup " << spec.warmup_steps
          << " -> " << warmup << ", decay " << spec.decay_steps << " -> " << decay << ", as LeRobot shrinks them)";
  } else {
    out << ": warmup " << spec.warmup_steps << " steps";
    if (spec.total_steps > 0) out << ", " << spec.total_steps << " steps in all";
  }
  return out.str();
}

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// The plan from the policy's wrap units (every parameter in exactly one, the root unit last) and its
// presets: what make_memory_plan reads of a built policy or of a planned one.
MemoryPlan plan_from_units(const std::function<std::string(const std::string&)>& gather_group,
                           const std::vector<dist::fsdp::WrapUnit>& wrap_units, const nlohmann::json& optimizer_preset,
                           const nlohmann::json& scheduler_preset, const AcceleratorConfig& accel,
                           const nlohmann::json& config, int64_t world_size) {
  MemoryPlan plan;
  plan.world_size = world_size;
  plan.effective_batch = accel.batch_size * world_size * accel.gradient_accumulation_steps;
  plan.batch_size = accel.batch_size;

  // The optimizer as the policy recipes build it: the policy's preset with the recipe's table on top.
  auto options = optimizer_preset;
  if (config.contains("optimizer") && config["optimizer"].is_object()) options.update(config["optimizer"]);
  const nlohmann::json kind = options.contains("type") ? options["type"] : nlohmann::json("adamw");
  if (!kind.is_string())
    throw util::ConfigError("optimizer.type must be one of " + optim::kOptimizerKindNames.choices() + ", got " +
                            kind.dump());
  plan.optimizer = optim::kOptimizerKindNames.parse(kind.get<std::string>(), "optimizer.type");
  plan.lr = options.contains("lr") && options["lr"].is_number() ? options["lr"].get<double>() : 0;
  const int64_t moments = optimizer_moments(plan.optimizer, options);

  int64_t trainable_bytes = 0, frozen_bytes = 0;
  for (const auto& unit : wrap_units)
    for (const auto& [name, p] : unit.params) {
      plan.parameters += p.numel();
      const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
      if (p.requires_grad()) {
        plan.trainable += p.numel();
        trainable_bytes += bytes;
      } else {
        frozen_bytes += bytes;
      }
    }
  const int64_t shard = accel.fsdp() ? accel.dp_shard : world_size;
  plan.units = dist::fsdp::plan_unit_layouts(wrap_units, static_cast<int>(shard));
  const bool bf16_gathers = accel.mixed_precision == MixedPrecision::bf16 && accel.fsdp();
  auto gathered_bytes = [&](const dist::fsdp::UnitLayout& unit) {
    int64_t bytes = 0;
    for (const auto& p : unit.params) bytes += p.numel() * (bf16_gathers ? 2 : element_bytes(p.dtype));
    return bytes;
  };

  // Per rank: shards of every group; gradients and optimizer state of the trainable ones. Gathered:
  // the root unit, and per module (all its groups; with the units gathered together with it, as the
  // policy says: Policy::fsdp_gather_group) the largest.
  int64_t trainable_shard_bytes = 0, frozen_shard_bytes = 0, root_bytes = 0, all_gathered = 0;
  int64_t trainable_shard_numel = 0;
  std::map<std::string, int64_t> module_bytes;
  for (const auto& unit : plan.units) {
    (unit.frozen ? frozen_shard_bytes : trainable_shard_bytes) += shard_bytes(unit);
    if (!unit.frozen) trainable_shard_numel += unit.shard_numel();
    all_gathered += gathered_bytes(unit);
    if (unit.module_type == "root")
      root_bytes += gathered_bytes(unit);
    else
      module_bytes[gather_group(unit.name)] += gathered_bytes(unit);
  }
  int64_t largest_unit = 0;
  for (const auto& [name, bytes] : module_bytes) largest_unit = std::max(largest_unit, bytes);

  // The EMA's fp32 shadow of what trains (weight_ema.hpp): whole under DDP, the shards under FSDP.
  const bool ema = config.contains("ema") && config["ema"].is_object() && config["ema"].value("enable", false);
  plan.ema_on_main_only = ema && !accel.fsdp() && config["ema"].value("on_main_only", false);
  StrategyMemory ddp{"ddp",
                     1,
                     trainable_bytes + frozen_bytes,
                     trainable_bytes,
                     moments * trainable_bytes,
                     ema ? 4 * plan.trainable : 0,
                     0};
  auto sharded = [&](const std::string& name, bool reshard) {
    StrategyMemory m{name,
                     shard,
                     trainable_shard_bytes + frozen_shard_bytes,
                     trainable_shard_bytes,
                     moments * trainable_shard_bytes,
                     ema ? 4 * trainable_shard_numel : 0,
                     0};
    // ZeRO-3: the root unit, the running unit and one prefetched unit; ZeRO-2: everything, between
    // forward and the end of backward.
    m.peak_gathered_bytes = reshard ? root_bytes + 2 * largest_unit : all_gathered;
    return m;
  };
  std::string prefix = accel.fsdp() && accel.dp_replicate > 1 ? "hybrid " : "";
  auto zero3 = sharded(prefix + "zero-3", true), zero2 = sharded(prefix + "zero-2", false);
  plan.strategy = accel.strategy_name(world_size);
  plan.schedule = describe_schedule(scheduler_preset, config);
  if (!accel.fsdp())
    plan.strategies = {ddp, zero3, zero2};
  else if (accel.reshard_after_forward)
    plan.strategies = {zero3, zero2, ddp};
  else
    plan.strategies = {zero2, zero3, ddp};
  if (config.contains("save_async") && config["save_async"].is_boolean() && config["save_async"].get<bool>()) {
    const auto& chosen = plan.strategies.front();
    plan.async_checkpoint_bytes =
        trainable_bytes + frozen_bytes + chosen.optimizer_bytes + (accel.fsdp() ? chosen.parameter_bytes : 0);
  }
  return plan;
}

}  // namespace

MemoryPlan make_memory_plan(policy::Policy& policy, const nlohmann::json& config, int64_t world_size) {
  auto accel = AcceleratorConfig::from_recipe_config(config).resolved_for(world_size);
  auto gather_group = [&policy](const std::string& unit) { return policy.fsdp_gather_group(unit); };
  auto plan = plan_from_units(gather_group, dist::fsdp::find_wrap_units(policy, accel.wrap_modules),
                              nlohmann::json(policy.optimizer_preset()), nlohmann::json(policy.scheduler_preset()),
                              accel, config, world_size);
  plan.activations_under_autocast = policy.own_autocast().has_value();
  return plan;
}

MemoryPlan make_memory_plan(const policy::PlannedPolicy& planned, const nlohmann::json& config, int64_t world_size) {
  auto accel = AcceleratorConfig::from_recipe_config(config).resolved_for(world_size);
  if (!accel.wrap_modules.empty()) {
    std::set<std::string> declared;
    for (const auto& unit : planned.units) declared.insert(unit.module_type);
    if (std::set<std::string>(accel.wrap_modules.begin(), accel.wrap_modules.end()) != declared)
      throw util::NotImplemented("lrhost show: accelerator.fsdp.wrap_modules other than policy '" + planned.type +
                                     "''s own units cannot be planned without building the policy",
                                 "leave accelerator.fsdp.wrap_modules empty to plan the declared units");
  }
  std::vector<dist::fsdp::WrapUnit> units;
  for (const auto& unit : planned.units) units.push_back({unit.path, unit.module_type, nullptr, unit.params});
  if (!planned.root.empty()) units.push_back({"", "root", nullptr, planned.root});
  // A planned policy is described, not built: its spec's grouping (pi0/pi05's, config-independent).
  const auto* spec = policy::find_policy_spec(planned.type);
  auto gather_group = [spec](const std::string& unit) {
    return spec && spec->fsdp_gather_group ? spec->fsdp_gather_group(unit) : unit;
  };
  auto plan = plan_from_units(gather_group, units, nlohmann::json(planned.optimizer_preset),
                              nlohmann::json(planned.scheduler_preset), accel, config, world_size);
  plan.activation_bytes_per_sample = planned.activation_bytes_per_sample;
  plan.activation_note = planned.activation_note;
  plan.activations_under_autocast = planned.activations_under_autocast;
  return plan;
}

int64_t gpu_reserve_bytes(int64_t gpu_memory_bytes) {
  return (int64_t{1} << 30) + gpu_memory_bytes / 20;
}

int64_t largest_batch_per_rank(const MemoryPlan& plan, const StrategyMemory& strategy, int64_t gpu_memory_bytes) {
  if (plan.activation_bytes_per_sample <= 0) return -1;
  const int64_t free = gpu_memory_bytes - gpu_reserve_bytes(gpu_memory_bytes) - strategy.persistent_bytes() -
                       strategy.peak_gathered_bytes;
  return free <= 0 ? 0 : free / plan.activation_bytes_per_sample;
}

std::string render_memory_plan(const MemoryPlan& plan) {
  std::ostringstream out;
  out << "plan for " << plan.world_size << " rank(s): " << plan.strategy << "\n";
  out << "  parameters: " << plan.parameters << " (" << plan.trainable << " trainable); optimizer "
      << optim::optimizer_kind_name(plan.optimizer) << ", lr " << plan.lr;
  if (plan.effective_batch > 0) out << "; effective batch " << plan.effective_batch;
  out << "\n";
  if (!plan.schedule.empty()) out << "  lr schedule: " << plan.schedule << "\n";
  // Units grouped by module type, in first-appearance order.
  std::vector<std::string> order;
  std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> by_type;  // count, elements, bytes
  for (const auto& unit : plan.units) {
    // e.g. "LlamaDecoderLayer frozen bfloat16"
    std::string key = unit.module_type + (unit.frozen ? " frozen " : " ") +
                      (unit.params.empty() ? "" : util::dtype_name(unit.params.front().dtype));
    if (!by_type.count(key)) order.push_back(key);
    auto& [count, elements, bytes] = by_type[key];
    ++count;
    elements += unit.numel();
    bytes += unit.numel() * (unit.params.empty() ? 4 : element_bytes(unit.params.front().dtype));
  }
  out << "  wrap units (shard group of " << (plan.units.empty() ? 1 : plan.units.front().shard_size) << "):\n";
  for (const auto& type : order) {
    auto [count, elements, bytes] = by_type[type];
    char line[160];
    std::snprintf(line, sizeof line, "    %-40s %4lld x %12lld params  (%s each)\n", type.c_str(),
                  static_cast<long long>(count), static_cast<long long>(elements / count), mib(bytes / count).c_str());
    out << line;
  }
  const bool ema = !plan.strategies.empty() && plan.strategies.front().ema_bytes > 0;
  out << "  per rank, between steps (parameters + gradients + optimizer state" << (ema ? " + EMA" : "")
      << ") and peak gathered parameters:\n";
  for (std::size_t i = 0; i < plan.strategies.size(); ++i) {
    const auto& s = plan.strategies[i];
    char line[280];
    std::snprintf(line, sizeof line,
                  "    %-16s %-6s params %10s  grads %10s  optimizer %10s%s%s  = %10s   gathered peak %10s%s\n",
                  s.name.c_str(), ("/" + std::to_string(s.shard_size)).c_str(), mib(s.parameter_bytes).c_str(),
                  mib(s.gradient_bytes).c_str(), mib(s.optimizer_bytes).c_str(), ema ? "  ema " : "",
                  ema ? mib(s.ema_bytes).c_str() : "", mib(s.persistent_bytes()).c_str(),
                  mib(s.peak_gathered_bytes).c_str(), i == 0 ? "   <- this config" : "");
    out << line;
  }
  if (plan.ema_on_main_only) out << "    (ema.on_main_only: the EMA figures are rank 0's; the other ranks hold none)\n";
  if (plan.activation_bytes_per_sample >= 0) {
    out << "  activations: " << mib(plan.activation_bytes_per_sample) << " per sample";
    if (plan.batch_size > 0)
      out << ", " << mib(plan.activation_bytes_per_sample * plan.batch_size) << " per rank at batch "
          << plan.batch_size;
    out << "\n    ("
        << (plan.activation_note.empty()
                ? std::string("measured: one training forward on CPU at batch 1 and 2 in the policy's dtypes")
                : plan.activation_note)
        << (plan.activations_under_autocast ? "; under the policy's own bf16 autocast"
                                            : "; bf16 autocast roughly halves it")
        << ")\n";
  }
  for (const int64_t gpu : plan.gpu_memory_bytes) {
    out << "  largest batch per rank in " << util::human_bytes(gpu) << " per GPU (after "
        << util::human_bytes(gpu_reserve_bytes(gpu))
        << " for the CUDA context, workspaces and fragmentation; activations as measured above):";
    for (std::size_t i = 0; i < plan.strategies.size(); ++i) {
      const auto batch = largest_batch_per_rank(plan, plan.strategies[i], gpu);
      out << (i == 0 ? " " : ", ") << plan.strategies[i].name << " "
          << (batch < 0    ? std::string("? (activations not measured)")
              : batch == 0 ? std::string("0 (does not fit)")
                           : std::to_string(batch))
          << (i == 0 ? " <- this config" : "");
    }
    out << "\n";
  }
  if (plan.async_checkpoint_bytes > 0)
    out << "  async checkpoint host copy (save_async): " << mib(plan.async_checkpoint_bytes)
        << " on rank 0 (model + its optimizer state; FSDP: + its shards), held from a save until its writer "
           "finishes\n";
  out << "  (activations and the allocator's cache come on top; measured: acc:memory_stats(opt))\n";
  return out.str();
}

nlohmann::ordered_json memory_plan_json(const MemoryPlan& plan) {
  nlohmann::ordered_json json;
  json["world_size"] = plan.world_size;
  json["strategy"] = plan.strategy;
  json["optimizer"] = optim::optimizer_kind_name(plan.optimizer);
  json["lr"] = plan.lr;
  json["effective_batch"] = plan.effective_batch;
  json["batch_size"] = plan.batch_size;
  json["activation_bytes_per_sample"] = plan.activation_bytes_per_sample;
  json["activations_under_autocast"] = plan.activations_under_autocast;
  json["parameters"] = plan.parameters;
  json["trainable"] = plan.trainable;
  json["schedule"] = plan.schedule;
  json["async_checkpoint_bytes"] = plan.async_checkpoint_bytes;
  json["ema_on_main_only"] = plan.ema_on_main_only;
  json["gpu_memory_bytes"] = plan.gpu_memory_bytes;  // the sizes largest_batch_per_rank lists
  auto units = nlohmann::ordered_json::array();
  for (const auto& unit : plan.units)
    units.push_back({{"name", unit.name},
                     {"type", unit.module_type},
                     {"frozen", unit.frozen},
                     {"dtype", unit.params.empty() ? "" : util::dtype_name(unit.params.front().dtype)},
                     {"numel", unit.numel()},
                     {"shard_numel", unit.shard_numel()}});
  json["units"] = units;
  auto strategies = nlohmann::ordered_json::array();
  for (const auto& s : plan.strategies) {
    auto batches = nlohmann::ordered_json::array();  // one per gpu_memory_bytes size
    for (const int64_t gpu : plan.gpu_memory_bytes) batches.push_back(largest_batch_per_rank(plan, s, gpu));
    strategies.push_back({{"name", s.name},
                          {"shard_size", s.shard_size},
                          {"parameter_bytes", s.parameter_bytes},
                          {"gradient_bytes", s.gradient_bytes},
                          {"optimizer_bytes", s.optimizer_bytes},
                          {"ema_bytes", s.ema_bytes},
                          {"persistent_bytes", s.persistent_bytes()},
                          {"peak_gathered_bytes", s.peak_gathered_bytes},
                          {"largest_batch_per_rank", batches}});
  }
  json["strategies"] = strategies;
  return json;
}

}  // namespace lrhost::accel
