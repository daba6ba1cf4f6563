// Policy features from dataset metadata and to/from config.json.
#include "host/policy/policy_features.hpp"

#include <set>

#include "host/util/error.hpp"

namespace lrhost::policy {

int64_t PolicyFeature::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string policy_feature_type(const data::FeatureSpec& feature) {
  if (feature.is_camera()) return "VISUAL";
  if (feature.key == "observation.environment_state") return "ENV";
  if (feature.key.rfind("observation", 0) == 0) return "STATE";
  if (feature.key.rfind("action", 0) == 0) return "ACTION";
  return "";
}

PolicyFeatures PolicyFeatures::from_dataset(const data::DatasetInfo& info) {
  PolicyFeatures features;
  for (const auto& spec : info.features) {
    auto type = policy_feature_type(spec);
    if (type.empty() || spec.kind == data::FeatureKind::Text) continue;
    PolicyFeature feature{spec.key, type, spec.is_camera() ? spec.chw_shape() : spec.shape};
    (type == "ACTION" ? features.outputs : features.inputs).push_back(std::move(feature));
  }
  return features;
}

std::vector<PolicyFeature> PolicyFeatures::list_from_json(const nlohmann::ordered_json& table,
                                                          const std::string& what) {
  static const std::set<std::string> types{"VISUAL", "STATE", "ENV", "ACTION"};
  if (!table.is_object())
    throw util::ConfigError(what + " must be an object {key: {type, shape}}, got " + table.dump());
  std::vector<PolicyFeature> list;
  for (const auto& [key, value] : table.items()) {
    const std::string where = what + "." + key;
    if (!value.is_object() || !value.contains("type") || !value["type"].is_string() || !value.contains("shape") ||
        !value["shape"].is_array())
      throw util::ConfigError(where + " must be {\"type\": ..., \"shape\": [...]}, got " + value.dump());
    for (const auto& [field, unused] : value.items())
      if (field != "type" && field != "shape") throw util::ConfigError(where + ": unknown field '" + field + "'");
    auto type = value["type"].get<std::string>();
    if (!types.count(type))
      throw util::ConfigError(where + ".type must be VISUAL, STATE, ENV or ACTION, got '" + type + "'");
    PolicyFeature feature{key, type, {}};
    for (const auto& d : value["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() <= 0)
        throw util::ConfigError(where + ".shape must hold positive integers, got " + value["shape"].dump());
      feature.shape.push_back(d.get<int64_t>());
    }
    if (type == "VISUAL" && feature.shape.size() != 3)
      throw util::ConfigError(where + ": a VISUAL feature needs a [C, H, W] shape, got " + value["shape"].dump());
    list.push_back(std::move(feature));
  }
  return list;
}

nlohmann::ordered_json PolicyFeatures::list_to_json(const std::vector<PolicyFeature>& features) {
  nlohmann::ordered_json table = nlohmann::ordered_json::object();
  for (const auto& f : features) table[f.key] = {{"type", f.type}, {"shape", f.shape}};
  return table;
}

namespace {
const PolicyFeature* find_in(const std::vector<PolicyFeature>& list, const std::string& key) {
  for (const auto& f : list)
    if (f.key == key) return &f;
  return nullptr;
}
}  // namespace

const PolicyFeature* PolicyFeatures::find_input(const std::string& key) const {
  return find_in(inputs, key);
}
const PolicyFeature* PolicyFeatures::find_output(const std::string& key) const {
  return find_in(outputs, key);
}

std::vector<PolicyFeature> PolicyFeatures::inputs_of_type(const std::string& type) const {
  std::vector<PolicyFeature> result;
  for (const auto& f : inputs)
    if (f.type == type) result.push_back(f);
  return result;
}

}  // namespace lrhost::policy
