// What every policy config shares with LeRobot's PreTrainedConfig (configs/policies.py): its base
// fields (n_obs_steps through pretrained_revision, their field list in config_fields.hpp), the
// feature properties derived from them, and a reader for the field kinds ConfigReader does not
// cover (null-able values, feature tables, the normalization mapping), so that every policy reads
// and writes these fields, and words its errors, the same way.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/config/config_reader.hpp"
#include "host/policy/policy_features.hpp"

namespace lrhost::policy {

// Feature type -> normalization mode, in config.json's order.
using NormalizationMapping = std::vector<std::pair<std::string, std::string>>;

// Reads the fields of a policy's config table that ConfigReader cannot: ConfigReader cannot tell
// null from absent, and LeRobot's None defaults need that. Each read marks its key as known to
// `reader`; errors are util::ConfigErrors that start with `where` (e.g. "policy 'act'").
class PolicyFieldReader {
 public:
  PolicyFieldReader(config::ConfigReader& reader, const nlohmann::json& table, std::string where);

  // Accepts the "type" key of config.json, which must name this policy when present.
  void expect_type(const std::string& type);
  [[noreturn]] void wrong_type(const std::string& key, const std::string& expected, const nlohmann::json& value) const;

  // The value of a field whose LeRobot default is None: absent or null gives nullptr.
  const nlohmann::json* nullable(const std::string& key);
  std::optional<std::string> optional_string(const std::string& key);
  std::optional<bool> optional_bool(const std::string& key);
  std::optional<double> optional_number(const std::string& key);
  // Integral JSON numbers (Lua tables deliver integers as numbers).
  std::optional<int64_t> optional_integer(const std::string& key);
  std::optional<std::vector<std::string>> optional_strings(const std::string& key);
  // A LeRobot `int = False` field: config.json holds false/true, and draccus takes 0/1 as well.
  bool bool_or_int(const std::string& key, bool fallback);
  // {key: {"type", "shape"}} as in config.json; absent, null or empty gives `fallback`.
  std::vector<PolicyFeature> features(const std::string& key, const std::vector<PolicyFeature>& fallback);
  // {feature type: mode}. JSON tables arrive with sorted keys, so the entries are put in canonical
  // order: the types of `fallback` (the policy's default) in its order, then the others in LeRobot's
  // FeatureType order; a re-saved config.json then lists them as LeRobot does.
  NormalizationMapping normalization_mapping(const std::string& key, const NormalizationMapping& fallback);

 private:
  config::ConfigReader& reader_;
  const nlohmann::json& table_;
  std::string where_;
};

// An optional value as config.json writes it: the value, or null.
nlohmann::ordered_json optional_json(const auto& value) {
  if (!value) return nullptr;
  return nlohmann::ordered_json(*value);
}

// LeRobot's PreTrainedConfig fields, in its dataclass order, with its defaults (a policy overriding
// a default, as Diffusion does n_obs_steps, sets it in its constructor).
struct PretrainedConfigFields {
  int64_t n_obs_steps = 1;
  std::vector<PolicyFeature> input_features;
  std::vector<PolicyFeature> output_features;
  std::optional<std::string> device;
  bool use_amp = false;
  bool use_peft = false;
  bool push_to_hub = true;
  std::optional<std::string> repo_id;
  std::optional<bool> private_repo;  // "private" in config.json
  std::optional<std::vector<std::string>> tags;
  std::optional<std::string> license;
  std::optional<std::string> pretrained_path;
  std::optional<std::string> pretrained_revision;

  // Visits the base fields in LeRobot's order (defined in config_fields.hpp, which has the traits).
  // Whether n_obs_steps shapes the weights depends on the policy (Diffusion's conditioning width).
  template <class Self, class F>
  static void fields(Self& c, F&& f, bool n_obs_steps_shapes_weights);
  bool operator==(const PretrainedConfigFields&) const = default;

  // LeRobot's PreTrainedConfig properties: observation.state of type STATE, the first ENV input,
  // the VISUAL inputs in order, and the ACTION output named "action".
  const PolicyFeature* robot_state_feature() const;
  const PolicyFeature* env_state_feature() const;
  std::vector<PolicyFeature> image_features() const;
  const PolicyFeature* action_feature() const;
};

// Writes a normalization mapping as a config.json table, keeping its order.
nlohmann::ordered_json normalization_mapping_json(const NormalizationMapping& mapping);

}  // namespace lrhost::policy
