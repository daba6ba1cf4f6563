// AcceleratorConfig: the recipe's batch_size, accelerator and parallelism tables read strictly, and
// the layout resolved for a rank count (dist::check_dp_layout's rule).
#include "host/accel/accelerator.hpp"
#include "host/config/config_reader.hpp"
#include "host/dist/dp_layout.hpp"
#include "host/util/error.hpp"

namespace lrhost::accel {
namespace {

// accelerator.fsdp.wrap_modules: a list of module type names, or one comma-separated string (handy
// as a command-line override).
std::vector<std::string> read_wrap_modules(const nlohmann::json& value) {
  std::vector<std::string> names;
  auto add = [&](std::string name) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (!name.empty()) names.push_back(name);
  };
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    for (std::size_t start = 0, comma; start <= text.size(); start = comma + 1) {
      comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      add(text.substr(start, comma - start));
    }
  } else if (value.is_array()) {
    for (const auto& item : value) {
      if (!item.is_string())
        throw util::ConfigError("config 'accelerator.fsdp.wrap_modules' must list module type names, got " +
                                value.dump());
      add(item.get<std::string>());
    }
  } else if (!value.is_null() && !(value.is_object() && value.empty())) {
    throw util::ConfigError("config 'accelerator.fsdp.wrap_modules' must be a list of module type names, got " +
                            value.dump());
  }
  return names;
}

}  // namespace

AcceleratorConfig AcceleratorConfig::from_recipe_config(const nlohmann::json& config) {
  AcceleratorConfig result;
  if (config.is_object() && config.contains("batch_size")) {
    if (!config["batch_size"].is_number_integer() || config["batch_size"].get<int64_t>() <= 0)
      throw util::ConfigError("config 'batch_size' must be a positive integer, got " + config["batch_size"].dump());
    result.batch_size = config["batch_size"].get<int64_t>();
  }
  static const nlohmann::json empty = nlohmann::json::object();
  const auto& accel = config.contains("accelerator") ? config["accelerator"] : empty;
  config::ConfigReader reader(accel, "config 'accelerator'");
  result.mixed_precision = reader.choice("mixed_precision", MixedPrecision::no, kMixedPrecisionNames);
  result.gradient_accumulation_steps = reader.positive_integer("gradient_accumulation_steps", 1);
  result.nonfinite = reader.choice("nonfinite", NonfinitePolicy::error, kNonfinitePolicyNames);
  result.max_skipped_steps = reader.integer("max_skipped_steps", result.max_skipped_steps);
  if (result.max_skipped_steps < 0)
    throw util::ConfigError("config 'accelerator.max_skipped_steps' must be >= 0, got " +
                            std::to_string(result.max_skipped_steps));
  if (accel.contains("tf32")) result.tf32 = reader.boolean("tf32", false);
  // 0 (the shipped recipes' default): the known GPUs' table.
  if (const double peak = reader.number("peak_tflops", 0); peak > 0)
    result.peak_tflops = peak;
  else if (peak < 0)
    throw util::ConfigError("config 'accelerator.peak_tflops' must be >= 0 (0: the known GPUs' table), got " +
                            std::to_string(peak));
  result.cudnn_benchmark = reader.boolean("cudnn_benchmark", false);
  result.cuda_graph = reader.boolean("cuda_graph", false);
  reader.allow("ddp");
  reader.allow("fsdp");
  reader.reject_unknown();
  if (accel.contains("ddp")) {
    config::ConfigReader ddp(accel["ddp"], "config 'accelerator.ddp'");
    result.buckets.bytes = static_cast<std::size_t>(ddp.positive_number("bucket_cap_mb", 25) * (1 << 20));
    result.buckets.first_bytes = static_cast<std::size_t>(ddp.positive_number("first_bucket_mb", 1) * (1 << 20));
    ddp.reject_unknown();
  }
  if (config.contains("parallelism")) {
    config::ConfigReader parallel(config["parallelism"], "config 'parallelism'");
    result.dp_shard = parallel.integer("dp_shard", 1);
    result.dp_replicate = parallel.integer("dp_replicate", 1);
    parallel.reject_unknown();
    if (result.dp_shard < 1 && result.dp_shard != -1)
      throw util::ConfigError("config 'parallelism.dp_shard' must be -1 (all ranks dp_replicate leaves) or >= 1, got " +
                              std::to_string(result.dp_shard));
    if (result.dp_replicate < 1 && result.dp_replicate != -1)
      throw util::ConfigError("config 'parallelism.dp_replicate' must be -1 (all ranks dp_shard leaves) or >= 1, got " +
                              std::to_string(result.dp_replicate));
    if (result.dp_shard == -1 && result.dp_replicate == -1)
      throw util::ConfigError("config 'parallelism': dp_shard and dp_replicate cannot both be -1",
                              "give one of them as a number of ranks");
    result.fsdp_requested = result.dp_shard != 1;
  }
  if (accel.contains("fsdp")) {
    const auto& table = accel["fsdp"];
    config::ConfigReader fsdp(table, "config 'accelerator.fsdp'");
    result.reshard_after_forward = fsdp.boolean("reshard_after_forward", true);
    fsdp.allow("wrap_modules");
    fsdp.reject_unknown();
    if (table.contains("wrap_modules")) result.wrap_modules = read_wrap_modules(table["wrap_modules"]);
  }
  return result;
}

AcceleratorConfig AcceleratorConfig::resolved_for(int64_t world) const {
  AcceleratorConfig result = *this;
  if (result.dp_shard == -1) result.dp_shard = result.dp_replicate > 0 ? world / result.dp_replicate : 0;
  if (result.dp_replicate == -1) result.dp_replicate = result.dp_shard > 0 ? world / result.dp_shard : 0;
  // dp_shard = 1 with the default dp_replicate = 1 is plain DDP over every rank.
  if (result.dp_shard == 1 && dp_replicate == 1) result.dp_replicate = world;
  dist::check_dp_layout(result.dp_shard, result.dp_replicate, world, dp_shard, dp_replicate);
  return result;
}

}  // namespace lrhost::accel
