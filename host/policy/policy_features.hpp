// The features a policy is built for, as LeRobot's `input_features` / `output_features`: an ordered
// list of (key, type, shape) where type is VISUAL, STATE, ENV or ACTION and camera shapes are
// [C, H, W]. Order matters (it is the camera order of ACT and Diffusion), so these are vectors kept in
// dataset order, never maps. Built from a dataset's info.json (`dataset_to_policy_features`) or read
// from a config.json.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/data/dataset_info.hpp"

namespace lrhost::policy {

struct PolicyFeature {
  std::string key;
  std::string type;            // "VISUAL" | "STATE" | "ENV" | "ACTION"
  std::vector<int64_t> shape;  // [C, H, W] for VISUAL

  int64_t numel() const;
  bool operator==(const PolicyFeature&) const = default;
};

struct PolicyFeatures {
  std::vector<PolicyFeature> inputs;   // every non-ACTION feature
  std::vector<PolicyFeature> outputs;  // ACTION features

  // LeRobot's dataset_to_policy_features + make_policy split: cameras -> VISUAL (CHW),
  // observation.environment_state -> ENV, other observation* -> STATE, action* -> ACTION; the rest
  // (timestamp, index, ...) is not a policy feature.
  static PolicyFeatures from_dataset(const data::DatasetInfo& info);
  // {"key": {"type": ..., "shape": [...]}, ...} as in config.json (`what` names the field in errors).
  static std::vector<PolicyFeature> list_from_json(const nlohmann::ordered_json& table, const std::string& what);
  static nlohmann::ordered_json list_to_json(const std::vector<PolicyFeature>& features);

  const PolicyFeature* find_input(const std::string& key) const;
  const PolicyFeature* find_output(const std::string& key) const;
  // Inputs of one type, in order (e.g. the cameras: of_type("VISUAL")).
  std::vector<PolicyFeature> inputs_of_type(const std::string& type) const;
  bool empty() const { return inputs.empty() && outputs.empty(); }
  bool operator==(const PolicyFeatures&) const = default;
};

// The policy feature type of a dataset feature, or "" when it is not one.
std::string policy_feature_type(const data::FeatureSpec& feature);

}  // namespace lrhost::policy
