// Per-feature-type normalization of batches; see batch_normalizer.hpp.
#include "host/data/batch_normalizer.hpp"

#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::data {

FeatureType feature_type_of(const FeatureSpec& feature) {
  if (feature.is_camera()) return FeatureType::Visual;
  if (feature.key == "action") return FeatureType::Action;
  if (feature.key == "observation.environment_state") return FeatureType::Env;
  if (feature.key.rfind("observation.", 0) == 0) return FeatureType::State;
  return FeatureType::Other;
}

BatchNormalizer::BatchNormalizer(const DatasetInfo& info, DatasetStats stats,
                                 const std::map<std::string, std::string>& mapping, bool use_imagenet_stats)
    : stats_(std::move(stats)) {
  const std::map<std::string, FeatureType> names{{"VISUAL", FeatureType::Visual},
                                                 {"STATE", FeatureType::State},
                                                 {"ENV", FeatureType::Env},
                                                 {"ACTION", FeatureType::Action}};
  std::map<FeatureType, NormMode> by_type;
  for (const auto& [type, mode] : mapping) {
    auto found = names.find(type);
    if (found == names.end())
      throw util::ConfigError("normalization mapping: unknown feature type '" + type + "'",
                              "valid types: " + util::quoted_list({"VISUAL", "STATE", "ENV", "ACTION"}));
    by_type[found->second] = parse_norm_mode(mode);
  }
  if (use_imagenet_stats) apply_imagenet_stats(stats_, info.camera_keys());
  for (const FeatureSpec& feature : info.features) {
    auto mode = by_type.find(feature_type_of(feature));
    if (mode == by_type.end() || mode->second == NormMode::Identity || !stats_.count(feature.key)) continue;
    modes_[feature.key] = mode->second;
  }
}

torch::Tensor BatchNormalizer::normalize(const std::string& key, const torch::Tensor& value) const {
  auto mode = modes_.find(key);
  return mode == modes_.end() ? value : data::normalize(value, stats_.at(key), mode->second);
}

torch::Tensor BatchNormalizer::unnormalize(const std::string& key, const torch::Tensor& value) const {
  auto mode = modes_.find(key);
  return mode == modes_.end() ? value : data::unnormalize(value, stats_.at(key), mode->second);
}

void BatchNormalizer::normalize(std::map<std::string, torch::Tensor>& batch) const {
  for (auto& [key, value] : batch) value = normalize(key, value);
}

}  // namespace lrhost::data
