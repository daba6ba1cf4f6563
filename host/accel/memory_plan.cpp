// Per-rank memory under each data-parallel strategy, from the unit layouts; see memory_plan.hpp.
#include "host/accel/memory_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "host/accel/accelerator.hpp"
#include "host/dist/fsdp/wrap_units.hpp"
#include "host/optim/scheduler.hpp"
#include "host/util/error.hpp"

namespace lrhost::accel {
namespace {

// Optimizer state bytes per fp32 parameter element: Adam's two moments (three with amsgrad's
// running maximum), SGD's momentum buffer.
int64_t optimizer_bytes_per_element(const std::string& kind, const nlohmann::json& options) {
  if (kind == "adam" || kind == "adamw")
    return options.contains("amsgrad") && options["amsgrad"].is_boolean() && options["amsgrad"].get<bool>() ? 12 : 8;
  double momentum = options.contains("momentum") && options["momentum"].is_number() ? options["momentum"].get<double>() : 0;
  return momentum > 0 ? 4 : 0;
}

// One line on the policy's scheduler preset as the recipes apply it (total_steps = config.steps).
std::string describe_schedule(const policy::Policy& policy, const nlohmann::json& config) {
  auto preset = nlohmann::json(policy.scheduler_preset());
  if (!preset.is_object()) return {};
  const int64_t steps = config.contains("steps") && config["steps"].is_number_integer() ? config["steps"].get<int64_t>() : 0;
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

}  // namespace

MemoryPlan make_memory_plan(policy::Policy& policy, const nlohmann::json& config, int64_t world_size) {
  auto accel = AcceleratorConfig::from_recipe_config(config).resolved_for(world_size);
  MemoryPlan plan;
  plan.world_size = world_size;
  plan.effective_batch = accel.batch_size * world_size * accel.gradient_accumulation_steps;

  // The optimizer as the policy recipes build it: the policy's preset with the recipe's table on top.
  auto options = nlohmann::json(policy.optimizer_preset());
  if (config.contains("optimizer") && config["optimizer"].is_object()) options.update(config["optimizer"]);
  plan.optimizer = options.value("type", std::string("adamw"));
  plan.lr = options.contains("lr") && options["lr"].is_number() ? options["lr"].get<double>() : 0;
  const int64_t state_per_element = optimizer_bytes_per_element(plan.optimizer, options);

  int64_t frozen_bytes = 0;
  for (const auto& p : policy.parameters()) {
    plan.parameters += p.numel();
    if (p.requires_grad())
      plan.trainable += p.numel();
    else
      frozen_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  const int64_t shard = accel.fsdp() ? accel.dp_shard : world_size;
  plan.units = dist::fsdp::plan_unit_layouts(policy, accel.wrap_modules, static_cast<int>(shard));
  const int64_t gathered_element = accel.mixed_precision == "bf16" && accel.fsdp() ? 2 : 4;

  int64_t shard_elements = 0, root_elements = 0, largest_unit = 0;
  for (const auto& unit : plan.units) {
    shard_elements += unit.shard_numel();
    if (unit.module_type == "root")
      root_elements = unit.numel();
    else
      largest_unit = std::max(largest_unit, unit.numel());
  }

  StrategyMemory ddp{"ddp", 1, 4 * plan.trainable + frozen_bytes, 4 * plan.trainable, state_per_element * plan.trainable, 0};
  auto sharded = [&](const std::string& name, bool reshard) {
    StrategyMemory m{name, shard, 4 * shard_elements + frozen_bytes, 4 * shard_elements, state_per_element * shard_elements,
                     0};
    // ZeRO-3: the root unit, the running unit and one prefetched unit; ZeRO-2: everything, between
    // forward and the end of backward.
    m.peak_gathered_bytes = gathered_element * (reshard ? root_elements + 2 * largest_unit : plan.trainable);
    return m;
  };
  std::string prefix = accel.fsdp() && accel.dp_replicate > 1 ? "hybrid " : "";
  auto zero3 = sharded(prefix + "zero-3", true), zero2 = sharded(prefix + "zero-2", false);
  plan.strategy = accel.strategy_name(world_size);
  plan.schedule = describe_schedule(policy, config);
  if (!accel.fsdp())
    plan.strategies = {ddp, zero3, zero2};
  else if (accel.reshard_after_forward)
    plan.strategies = {zero3, zero2, ddp};
  else
    plan.strategies = {zero2, zero3, ddp};
  return plan;
}

std::string render_memory_plan(const MemoryPlan& plan) {
  std::ostringstream out;
  out << "plan for " << plan.world_size << " rank(s): " << plan.strategy << "\n";
  out << "  parameters: " << plan.parameters << " (" << plan.trainable << " trainable); optimizer " << plan.optimizer
      << ", lr " << plan.lr;
  if (plan.effective_batch > 0) out << "; effective batch " << plan.effective_batch;
  out << "\n";
  if (!plan.schedule.empty()) out << "  lr schedule: " << plan.schedule << "\n";
  // Units grouped by module type, in first-appearance order.
  std::vector<std::string> order;
  std::map<std::string, std::pair<int64_t, int64_t>> by_type;  // count, elements
  for (const auto& unit : plan.units) {
    if (!by_type.count(unit.module_type)) order.push_back(unit.module_type);
    auto& [count, elements] = by_type[unit.module_type];
    ++count;
    elements += unit.numel();
  }
  out << "  wrap units (shard group of " << (plan.units.empty() ? 1 : plan.units.front().shard_size) << "):\n";
  for (const auto& type : order) {
    auto [count, elements] = by_type[type];
    char line[160];
    std::snprintf(line, sizeof line, "    %-40s %4lld x %12lld params  (%s fp32 each)\n", type.c_str(),
                  static_cast<long long>(count), static_cast<long long>(elements / count),
                  mib(4 * elements / count).c_str());
    out << line;
  }
  out << "  per rank, between steps (parameters + gradients + optimizer state) and peak gathered parameters:\n";
  for (std::size_t i = 0; i < plan.strategies.size(); ++i) {
    const auto& s = plan.strategies[i];
    char line[240];
    std::snprintf(line, sizeof line, "    %-16s %-6s params %10s  grads %10s  optimizer %10s  = %10s   gathered peak %10s%s\n",
                  s.name.c_str(), ("/" + std::to_string(s.shard_size)).c_str(), mib(s.parameter_bytes).c_str(),
                  mib(s.gradient_bytes).c_str(), mib(s.optimizer_bytes).c_str(), mib(s.persistent_bytes()).c_str(),
                  mib(s.peak_gathered_bytes).c_str(), i == 0 ? "   <- this config" : "");
    out << line;
  }
  out << "  (activations and the allocator's cache come on top; measured: acc:memory_stats(opt))\n";
  return out.str();
}

nlohmann::ordered_json memory_plan_json(const MemoryPlan& plan) {
  nlohmann::ordered_json json;
  json["world_size"] = plan.world_size;
  json["strategy"] = plan.strategy;
  json["optimizer"] = plan.optimizer;
  json["lr"] = plan.lr;
  json["effective_batch"] = plan.effective_batch;
  json["parameters"] = plan.parameters;
  json["trainable"] = plan.trainable;
  json["schedule"] = plan.schedule;
  auto units = nlohmann::ordered_json::array();
  for (const auto& unit : plan.units)
    units.push_back({{"name", unit.name}, {"type", unit.module_type}, {"numel", unit.numel()}, {"shard_numel", unit.shard_numel()}});
  json["units"] = units;
  auto strategies = nlohmann::ordered_json::array();
  for (const auto& s : plan.strategies)
    strategies.push_back({{"name", s.name},
                          {"shard_size", s.shard_size},
                          {"parameter_bytes", s.parameter_bytes},
                          {"gradient_bytes", s.gradient_bytes},
                          {"optimizer_bytes", s.optimizer_bytes},
                          {"persistent_bytes", s.persistent_bytes()},
                          {"peak_gathered_bytes", s.peak_gathered_bytes}});
  json["strategies"] = strategies;
  return json;
}

}  // namespace lrhost::accel
