// A policy's processors from a dataset; see dataset_processors.hpp.
#include "host/policy/dataset_processors.hpp"

#include <spdlog/spdlog.h>

#include "host/data/stats/normalizer.hpp"
#include "host/policy/processors.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {
namespace {

// A mixture normalized per dataset: each dataset's stats (ImageNet's for the cameras when asked, as
// for one dataset's), the first's then the defaults.
void set_per_dataset_stats(PolicyProcessors& processors, const data::DatasetMeta& meta, bool use_imagenet_stats) {
  if (meta.per_dataset_stats.empty()) return;
  auto per_dataset = meta.per_dataset_stats;
  if (use_imagenet_stats)
    for (auto& [name, stats] : per_dataset) data::apply_imagenet_stats(stats, meta.info.camera_keys());
  processors.set_per_dataset_stats(per_dataset);
  spdlog::info(
      "dataset.stats = per_dataset: each sample is normalized with its dataset's stats; checkpoints save "
      "each dataset's processors as policy_preprocessor_<name>.json, and the default files hold the "
      "first dataset's ('{}')",
      per_dataset.front().first);
}

}  // namespace

void attach_dataset_processors(Policy& policy, const PolicyFeatures& features, const data::DatasetMeta& meta,
                               const DatasetProcessorOptions& options) {
  data::DatasetStats stats = meta.stats.value_or(data::DatasetStats{});
  if (!meta.stats)
    spdlog::warn("lr.policy.new: the dataset has no stats.json; the policy's processors normalize nothing");
  if (options.use_imagenet_stats) data::apply_imagenet_stats(stats, meta.info.camera_keys());
  auto processors = PolicyProcessors::for_policy(policy, features, stats, options.normalization_mapping);
  set_per_dataset_stats(processors, meta, options.use_imagenet_stats);
  if (processors.has_language()) processors.set_task_table(meta.tasks);
  processors.require_stats(meta.root.string());
  policy.set_processors(std::make_shared<PolicyProcessors>(std::move(processors)));
}

void use_dataset(Policy& policy, const data::DatasetMeta& meta, bool use_imagenet_stats) {
  if (!meta.stats)
    throw util::ConfigError(meta.root.string() + ": the dataset has no stats.json, so its statistics cannot normalize",
                            "compute them (lrhost dataset stats PATH) or fine-tune on a dataset that has them");
  data::DatasetStats stats = *meta.stats;
  if (use_imagenet_stats) data::apply_imagenet_stats(stats, meta.info.camera_keys());
  auto processors = std::make_shared<PolicyProcessors>(
      PolicyProcessors::for_policy(policy, PolicyFeatures::from_dataset(meta.info), stats));
  set_per_dataset_stats(*processors, meta, use_imagenet_stats);
  processors->require_stats(meta.root.string());
  if (policy.processors()) processors->set_rename_map(policy.processors()->rename_map());
  if (processors->has_language()) processors->set_task_table(meta.tasks);
  policy.set_processors(std::move(processors));
}

const PolicyProcessors& require_processors(const Policy& policy, const std::string& what) {
  if (!policy.processors())
    throw util::ConfigError(what + ": the '" + policy.type() + "' policy has no processors",
                            "build it with lr.policy.new(cfg, dataset) or load it from a folder with processor files");
  return *policy.processors();
}

data::BatchStages loader_preprocessing(std::shared_ptr<const Policy> policy, const std::string& what) {
  require_processors(*policy, what);
  data::BatchStages stages;
  stages.before_copy = [policy, what](const data::Batch& batch) {
    return require_processors(*policy, what).preprocess_before_device(batch);
  };
  stages.after_copy = [policy, what](const data::Batch& batch) {
    return require_processors(*policy, what).preprocess_after_device(batch);
  };
  return stages;
}

}  // namespace lrhost::policy
