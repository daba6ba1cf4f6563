// ACT config: strict reading, LeRobot's validation, and config.json output.
#include "host/policy/act/act_config.hpp"

#include <algorithm>
#include <regex>

#include "host/config/config_reader.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy::act {
namespace {

const char* kWhere = "policy 'act'";

using util::ConfigError;

[[noreturn]] void wrong_type(const std::string& key, const std::string& expected, const nlohmann::json& value) {
  throw ConfigError(std::string(kWhere) + ": '" + key + "' must be " + expected + ", got " + value.dump());
}

// The value of a field whose LeRobot default is None: absent or null gives nullopt. ConfigReader
// cannot tell null from absent, so these read the table directly (and mark the key as known).
const nlohmann::json* nullable(config::ConfigReader& reader, const nlohmann::json& table, const std::string& key) {
  reader.allow(key);
  if (!table.is_object()) return nullptr;
  auto it = table.find(key);
  return it == table.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::string> optional_string(config::ConfigReader& reader, const nlohmann::json& table,
                                           const std::string& key) {
  const auto* value = nullable(reader, table, key);
  if (!value) return std::nullopt;
  if (!value->is_string()) wrong_type(key, "a string or null", *value);
  return value->get<std::string>();
}

std::optional<bool> optional_bool(config::ConfigReader& reader, const nlohmann::json& table, const std::string& key) {
  const auto* value = nullable(reader, table, key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) wrong_type(key, "true, false or null", *value);
  return value->get<bool>();
}

std::optional<double> optional_number(config::ConfigReader& reader, const nlohmann::json& table,
                                      const std::string& key) {
  const auto* value = nullable(reader, table, key);
  if (!value) return std::nullopt;
  if (!value->is_number()) wrong_type(key, "a number or null", *value);
  return value->get<double>();
}

std::optional<std::vector<std::string>> optional_strings(config::ConfigReader& reader, const nlohmann::json& table,
                                                         const std::string& key) {
  const auto* value = nullable(reader, table, key);
  if (!value) return std::nullopt;
  if (!value->is_array()) wrong_type(key, "a list of strings or null", *value);
  std::vector<std::string> result;
  for (const auto& element : *value) {
    if (!element.is_string()) wrong_type(key, "a list of strings or null", *value);
    result.push_back(element.get<std::string>());
  }
  return result;
}

// LeRobot declares `replace_final_stride_with_dilation: int = False`; config.json holds false/true,
// and draccus takes 0/1 as well.
bool bool_or_int(config::ConfigReader& reader, const nlohmann::json& table, const std::string& key, bool fallback) {
  const auto* value = nullable(reader, table, key);
  if (!value) return fallback;
  if (value->is_boolean()) return value->get<bool>();
  if (value->is_number_integer() && (value->get<int64_t>() == 0 || value->get<int64_t>() == 1))
    return value->get<int64_t>() == 1;
  wrong_type(key, "true, false, 0 or 1", *value);
}

std::vector<PolicyFeature> features_field(config::ConfigReader& reader, const nlohmann::json& table,
                                          const std::string& key, const std::vector<PolicyFeature>& fallback) {
  const auto* value = nullable(reader, table, key);
  if (!value || (value->is_object() && value->empty())) return fallback;
  return PolicyFeatures::list_from_json(nlohmann::ordered_json(*value), std::string(kWhere) + ": '" + key + "'");
}

std::vector<std::pair<std::string, std::string>> mapping_field(
    config::ConfigReader& reader, const nlohmann::json& table, const std::string& key,
    const std::vector<std::pair<std::string, std::string>>& fallback) {
  static const std::vector<std::string> feature_types{"STATE", "VISUAL", "ENV", "ACTION", "REWARD", "LANGUAGE"};
  static const std::vector<std::string> modes{"MIN_MAX", "MEAN_STD", "IDENTITY", "QUANTILES", "QUANTILE10"};
  const auto* value = nullable(reader, table, key);
  if (!value) return fallback;
  if (!value->is_object()) wrong_type(key, "a table {feature type: normalization mode}", *value);
  std::vector<std::pair<std::string, std::string>> result;
  for (const auto& [type, mode] : value->items()) {
    if (std::find(feature_types.begin(), feature_types.end(), type) == feature_types.end())
      throw ConfigError(std::string(kWhere) + ": '" + key + "' has unknown feature type '" + type + "'",
                        "feature types: " + util::quoted_list(feature_types));
    if (!mode.is_string() || std::find(modes.begin(), modes.end(), mode.get<std::string>()) == modes.end())
      throw ConfigError(std::string(kWhere) + ": '" + key + "." + type + "' must be one of " +
                        util::quoted_list(modes) + ", got " + mode.dump());
    result.emplace_back(type, mode.get<std::string>());
  }
  return result;
}

nlohmann::ordered_json optional_json(const auto& value) {
  if (!value) return nullptr;
  return nlohmann::ordered_json(*value);
}

}  // namespace

ACTConfig ACTConfig::from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features) {
  config::ConfigReader reader(table, kWhere);
  if (table.is_object() && table.contains("type") && table["type"] != "act")
    throw ConfigError(std::string(kWhere) + ": 'type' must be \"act\", got " + table["type"].dump());
  reader.allow("type");
  ACTConfig c;
  c.n_obs_steps = reader.integer("n_obs_steps", c.n_obs_steps);
  c.input_features = features_field(reader, table, "input_features", dataset_features.inputs);
  c.output_features = features_field(reader, table, "output_features", dataset_features.outputs);
  c.device = optional_string(reader, table, "device");
  c.use_amp = reader.boolean("use_amp", c.use_amp);
  c.use_peft = reader.boolean("use_peft", c.use_peft);
  c.push_to_hub = reader.boolean("push_to_hub", c.push_to_hub);
  c.repo_id = optional_string(reader, table, "repo_id");
  c.private_repo = optional_bool(reader, table, "private");
  c.tags = optional_strings(reader, table, "tags");
  c.license = optional_string(reader, table, "license");
  c.pretrained_path = optional_string(reader, table, "pretrained_path");
  c.pretrained_revision = optional_string(reader, table, "pretrained_revision");

  c.chunk_size = reader.integer("chunk_size", c.chunk_size);
  c.n_action_steps = reader.integer("n_action_steps", c.n_action_steps);
  c.normalization_mapping = mapping_field(reader, table, "normalization_mapping", c.normalization_mapping);
  c.vision_backbone = reader.string("vision_backbone", c.vision_backbone);
  c.pretrained_backbone_weights = optional_string(reader, table, "pretrained_backbone_weights");
  c.replace_final_stride_with_dilation =
      bool_or_int(reader, table, "replace_final_stride_with_dilation", c.replace_final_stride_with_dilation);
  c.pre_norm = reader.boolean("pre_norm", c.pre_norm);
  c.dim_model = reader.integer("dim_model", c.dim_model);
  c.n_heads = reader.integer("n_heads", c.n_heads);
  c.dim_feedforward = reader.integer("dim_feedforward", c.dim_feedforward);
  c.feedforward_activation = reader.string("feedforward_activation", c.feedforward_activation);
  c.n_encoder_layers = reader.integer("n_encoder_layers", c.n_encoder_layers);
  c.n_decoder_layers = reader.integer("n_decoder_layers", c.n_decoder_layers);
  c.use_vae = reader.boolean("use_vae", c.use_vae);
  c.latent_dim = reader.integer("latent_dim", c.latent_dim);
  c.n_vae_encoder_layers = reader.integer("n_vae_encoder_layers", c.n_vae_encoder_layers);
  c.temporal_ensemble_coeff = optional_number(reader, table, "temporal_ensemble_coeff");
  c.dropout = reader.number("dropout", c.dropout);
  c.kl_weight = reader.number("kl_weight", c.kl_weight);
  c.optimizer_lr = reader.number("optimizer_lr", c.optimizer_lr);
  c.optimizer_weight_decay = reader.number("optimizer_weight_decay", c.optimizer_weight_decay);
  c.optimizer_lr_backbone = reader.number("optimizer_lr_backbone", c.optimizer_lr_backbone);
  reader.reject_unknown();
  c.validate();
  return c;
}

void ACTConfig::validate() const {
  const std::string where = kWhere;
  auto fail = [&](const std::string& message, const std::string& hint = {}) {
    throw ConfigError(where + ": " + message, hint);
  };
  // configuration_act.py __post_init__.
  if (vision_backbone.rfind("resnet", 0) != 0)
    fail("'vision_backbone' must be one of the ResNet variants, got '" + vision_backbone + "'");
  if (temporal_ensemble_coeff && n_action_steps > 1)
    fail("'n_action_steps' must be 1 when using temporal ensembling (temporal_ensemble_coeff = " +
             std::to_string(*temporal_ensemble_coeff) + "), got " + std::to_string(n_action_steps),
         "the policy is queried every step to ensemble its chunks");
  if (n_action_steps > chunk_size)
    fail("'n_action_steps' (" + std::to_string(n_action_steps) + ") must not exceed 'chunk_size' (" +
         std::to_string(chunk_size) + "), the number of actions predicted per invocation");
  if (n_obs_steps != 1)
    fail("multiple observation steps are not handled by ACT: 'n_obs_steps' must be 1, got " +
         std::to_string(n_obs_steps));

  // Values LeRobot only rejects when it builds the modules (or not at all, then fails in forward).
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) fail(std::string("'") + key + "' must be a positive integer, got " + std::to_string(value));
  };
  auto non_negative = [&](const char* key, int64_t value) {
    if (value < 0) fail(std::string("'") + key + "' must be >= 0, got " + std::to_string(value));
  };
  positive("chunk_size", chunk_size);
  positive("n_action_steps", n_action_steps);
  positive("dim_model", dim_model);
  positive("n_heads", n_heads);
  positive("dim_feedforward", dim_feedforward);
  positive("latent_dim", latent_dim);
  non_negative("n_encoder_layers", n_encoder_layers);
  non_negative("n_decoder_layers", n_decoder_layers);
  non_negative("n_vae_encoder_layers", n_vae_encoder_layers);
  if (dim_model % n_heads != 0)
    fail("'dim_model' (" + std::to_string(dim_model) + ") must be divisible by 'n_heads' (" + std::to_string(n_heads) +
         ")");
  if (dim_model % 2 != 0) fail("'dim_model' must be even (half of it per axis of the 2-D position embedding)");
  if (!(dropout >= 0 && dropout < 1)) fail("'dropout' must be in [0, 1), got " + std::to_string(dropout));
  if (feedforward_activation == "glu")
    fail(
        "'feedforward_activation' = 'glu' halves linear1's output, which linear2 (dim_feedforward inputs) cannot "
        "take; LeRobot accepts the name but fails in the first forward",
        "use 'relu' or 'gelu'");
  if (feedforward_activation != "relu" && feedforward_activation != "gelu")
    fail("'feedforward_activation' must be one of 'relu', 'gelu', 'glu', got '" + feedforward_activation + "'");

  // validate_features and the features ACT reads.
  if (image_features().empty() && !env_state_feature())
    fail("you must provide at least one image or the environment state among the inputs",
         "input_features needs a VISUAL feature (observation.images.*) or observation.environment_state");
  if (!action_feature())
    fail("output_features needs an ACTION feature named 'action'",
         "build the policy from a dataset with an 'action' feature, or set output_features");
  for (const auto* feature : {robot_state_feature(), env_state_feature(), action_feature()})
    if (feature && feature->shape.size() != 1)
      fail("'" + feature->key + "' must be a vector feature (shape [n]), got " + nlohmann::json(feature->shape).dump());
  auto cameras = image_features();

  // Backbone: lrhost has torchvision's resnet18 trunk only, and never downloads weights.
  if (pretrained_backbone_weights &&
      std::regex_match(*pretrained_backbone_weights, std::regex(R"([A-Za-z0-9_]+_Weights\.[A-Za-z0-9_]+)")))
    fail("'pretrained_backbone_weights' = '" + *pretrained_backbone_weights +
             "' names torchvision weights, which lrhost never downloads",
         "convert them once to a .safetensors file (torchvision resnet18 state_dict) and give its path, or use null "
         "for random initialisation");
  if (!cameras.empty() && vision_backbone != "resnet18")
    throw util::NotImplemented(where + ": 'vision_backbone' = '" + vision_backbone +
                               "' is not implemented; lrhost has 'resnet18' only");
  if (!cameras.empty() && replace_final_stride_with_dilation)
    throw util::NotImplemented(where + ": 'replace_final_stride_with_dilation' = true is not implemented");
}

const PolicyFeature* ACTConfig::robot_state_feature() const {
  for (const auto& f : input_features)
    if (f.type == "STATE" && f.key == "observation.state") return &f;
  return nullptr;
}

const PolicyFeature* ACTConfig::env_state_feature() const {
  for (const auto& f : input_features)
    if (f.type == "ENV") return &f;
  return nullptr;
}

std::vector<PolicyFeature> ACTConfig::image_features() const {
  std::vector<PolicyFeature> result;
  for (const auto& f : input_features)
    if (f.type == "VISUAL") result.push_back(f);
  return result;
}

const PolicyFeature* ACTConfig::action_feature() const {
  for (const auto& f : output_features)
    if (f.type == "ACTION" && f.key == "action") return &f;
  return nullptr;
}

nlohmann::ordered_json ACTConfig::to_json() const {
  nlohmann::ordered_json j;
  j["type"] = "act";
  j["n_obs_steps"] = n_obs_steps;
  j["input_features"] = PolicyFeatures::list_to_json(input_features);
  j["output_features"] = PolicyFeatures::list_to_json(output_features);
  j["device"] = optional_json(device);
  j["use_amp"] = use_amp;
  j["use_peft"] = use_peft;
  j["push_to_hub"] = push_to_hub;
  j["repo_id"] = optional_json(repo_id);
  j["private"] = optional_json(private_repo);
  j["tags"] = optional_json(tags);
  j["license"] = optional_json(license);
  j["pretrained_path"] = optional_json(pretrained_path);
  j["pretrained_revision"] = optional_json(pretrained_revision);
  j["chunk_size"] = chunk_size;
  j["n_action_steps"] = n_action_steps;
  auto mapping = nlohmann::ordered_json::object();
  for (const auto& [type, mode] : normalization_mapping) mapping[type] = mode;
  j["normalization_mapping"] = mapping;
  j["vision_backbone"] = vision_backbone;
  j["pretrained_backbone_weights"] = optional_json(pretrained_backbone_weights);
  j["replace_final_stride_with_dilation"] = replace_final_stride_with_dilation;
  j["pre_norm"] = pre_norm;
  j["dim_model"] = dim_model;
  j["n_heads"] = n_heads;
  j["dim_feedforward"] = dim_feedforward;
  j["feedforward_activation"] = feedforward_activation;
  j["n_encoder_layers"] = n_encoder_layers;
  j["n_decoder_layers"] = n_decoder_layers;
  j["use_vae"] = use_vae;
  j["latent_dim"] = latent_dim;
  j["n_vae_encoder_layers"] = n_vae_encoder_layers;
  j["temporal_ensemble_coeff"] = optional_json(temporal_ensemble_coeff);
  j["dropout"] = dropout;
  j["kl_weight"] = kl_weight;
  j["optimizer_lr"] = optimizer_lr;
  j["optimizer_weight_decay"] = optimizer_weight_decay;
  j["optimizer_lr_backbone"] = optimizer_lr_backbone;
  return j;
}

}  // namespace lrhost::policy::act
