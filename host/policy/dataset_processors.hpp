// The processors a policy trains with on a LeRobot dataset, as lerobot-train's make_pre_post_processors
// builds them: the dataset's statistics (ImageNet's for the cameras unless use_imagenet_stats is off),
// its task table for language policies. Two entries: a new policy (lr.policy.new(config, dataset)),
// where a dataset without stats.json normalizes nothing and says so; and a pretrained policy
// fine-tuned on a dataset (Policy:use_dataset, lerobot-train --policy.path), which needs the stats and
// keeps the policy's rename map and language steps.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "host/data/dataset_meta.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy {

struct DatasetProcessorOptions {
  bool use_imagenet_stats = true;
  // Feature type -> mode, replacing the policy's (for types whose config has none, e.g. mlp).
  std::vector<std::pair<std::string, std::string>> normalization_mapping;
};

// Gives a newly built `policy` (its features `features`) the processors of `meta`.
void attach_dataset_processors(Policy& policy, const PolicyFeatures& features, const data::DatasetMeta& meta,
                               const DatasetProcessorOptions& options);

// Fine-tuning: `policy`'s processors take `meta`'s statistics and tasks; ConfigError naming the dataset
// when it has no stats.json.
void use_dataset(Policy& policy, const data::DatasetMeta& meta, bool use_imagenet_stats);

}  // namespace lrhost::policy
