// Builds the recipe's policy on the CPU and renders its memory plan; see show_plan.hpp.
#include "host/cli/show_plan.hpp"

#include <cstdlib>

#include "host/accel/memory_plan.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/data/dataset_meta.hpp"
#include "host/data/synthetic_push.hpp"
#include "host/policy/policy_features.hpp"
#include "host/policy/registry.hpp"

namespace lrhost::cli {

std::optional<std::string> show_memory_plan(const nlohmann::json& config, int64_t world_size) {
  if (!config.is_object() || !config.contains("policy") || !config["policy"].is_object() ||
      !config["policy"].contains("type"))
    return std::nullopt;
  std::string root;
  if (config.contains("dataset") && config["dataset"].is_object() && config["dataset"].contains("root") &&
      config["dataset"]["root"].is_string())
    root = config["dataset"]["root"].get<std::string>();
  auto dataset = root.empty() ? data::default_dataset() : std::filesystem::path(root);
  auto features = policy::PolicyFeatures::from_dataset(data::DatasetMeta::read(dataset).info);
  auto policy = policy::create_policy(config["policy"], features);
  auto plan = accel::make_memory_plan(*policy, config, world_size);
  if (const char* file = std::getenv("LRHOST_PLAN_JSON"); file != nullptr && *file != 0)
    io::write_file_atomic(file, accel::memory_plan_json(plan).dump(2));
  return accel::render_memory_plan(plan);
}

}  // namespace lrhost::cli
