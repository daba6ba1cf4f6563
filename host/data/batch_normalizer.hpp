// Normalization of training batches as LeRobot's normalizer processor does it: each feature gets the
// mode of its type (VISUAL for cameras, STATE for observation.*, ENV for
// observation.environment_state, ACTION for action) from a policy-style mapping; features without
// stats pass through. Cameras use ImageNet mean/std by default (use_imagenet_stats).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "host/data/dataset_info.hpp"
#include "host/data/stats/normalizer.hpp"

namespace lrhost::data {

enum class FeatureType { Visual, State, Env, Action, Other };
FeatureType feature_type_of(const FeatureSpec& feature);

class BatchNormalizer {
 public:
  // mapping: "VISUAL"/"STATE"/"ENV"/"ACTION" -> mode name ("MEAN_STD", ...); ConfigError otherwise.
  BatchNormalizer(const DatasetInfo& info, DatasetStats stats, const std::map<std::string, std::string>& mapping,
                  bool use_imagenet_stats = true);
  // Normalizes every known feature of the batch in place of its entry (a new tensor per key).
  void normalize(std::map<std::string, torch::Tensor>& batch) const;
  torch::Tensor normalize(const std::string& key, const torch::Tensor& value) const;
  torch::Tensor unnormalize(const std::string& key, const torch::Tensor& value) const;
  const DatasetStats& stats() const { return stats_; }

 private:
  DatasetStats stats_;
  std::map<std::string, NormMode> modes_;  // features with stats and a non-identity mode
};

}  // namespace lrhost::data
