// ACT config: strict reading, LeRobot's validation, and config.json output.
#include "host/policy/act/act_config.hpp"

#include "host/util/error.hpp"

namespace lrhost::policy::act {
namespace {

const char* kWhere = "policy 'act'";

using util::ConfigError;

}  // namespace

ACTConfig ACTConfig::from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features) {
  FieldReader reader(table, kWhere, dataset_features);
  reader.expect_type("act");
  ACTConfig c;
  read_config_fields(c, reader);
  reader.finish();
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

  // Backbone: lrhost has torchvision's resnet18 trunk only (its weights are found when it is built).
  if (!cameras.empty() && vision_backbone != "resnet18")
    throw util::NotImplemented(where + ": 'vision_backbone' = '" + vision_backbone +
                               "' is not implemented; lrhost has 'resnet18' only");
  if (!cameras.empty() && replace_final_stride_with_dilation)
    throw util::NotImplemented(where + ": 'replace_final_stride_with_dilation' = true is not implemented");
}

nlohmann::ordered_json ACTConfig::to_json() const {
  return write_config_fields(*this, "act");
}

const std::vector<std::string>& ACTConfig::weight_shape_fields() {
  static const std::vector<std::string> fields = config_field_names<ACTConfig>(&FieldTraits::shapes_weights);
  return fields;
}

}  // namespace lrhost::policy::act
