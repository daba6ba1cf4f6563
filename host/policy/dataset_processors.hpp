// The processors a policy trains with on a LeRobot dataset, as lerobot-train's make_pre_post_processors
// builds them: the dataset's statistics (ImageNet's for the cameras unless use_imagenet_stats is off),
// its task table for language policies. Two entries: a new policy (lr.policy.new(config, dataset)),
// where a dataset without stats.json normalizes nothing and says so; and a pretrained policy
// fine-tuned on a dataset (Policy:use_dataset, lerobot-train --policy.path), which needs the stats and
// keeps the policy's rename map and language steps. And the loader's side of them: a batch loader that
// hands the training loop batches the policy's preprocessor already prepared (loader_preprocessing).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "host/data/batch_loader.hpp"
#include "host/data/dataset_meta.hpp"
#include "host/policy/policy.hpp"
#include "host/policy/processors.hpp"

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

// `policy`'s processors; ConfigError naming `what` (the caller, e.g. "Policy:preprocess") and how to
// give it some when it has none.
const PolicyProcessors& require_processors(const Policy& policy, const std::string& what);

// The loader stages that run `policy`'s preprocessor on every batch, cut at its device step
// (PolicyProcessors::preprocess_before_device / _after_device). Each batch uses the processors the
// policy holds when next() prepares it, so a later Policy:use_dataset is seen. `what` names the caller
// in the error when the policy has no processors (checked here, before any batch).
data::BatchStages loader_preprocessing(std::shared_ptr<const Policy> policy, const std::string& what);

}  // namespace lrhost::policy
