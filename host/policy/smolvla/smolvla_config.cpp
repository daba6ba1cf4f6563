// SmolVLA config: strict reading, LeRobot's validation, and config.json output.
#include "host/policy/smolvla/smolvla_config.hpp"

#include <algorithm>

#include "host/util/error.hpp"

namespace lrhost::policy::smolvla {
namespace {

const char* kWhere = "policy 'smolvla'";

using util::ConfigError;

}  // namespace

SmolVLAConfig SmolVLAConfig::from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features) {
  FieldReader reader(table, kWhere, dataset_features);
  reader.expect_type("smolvla");
  SmolVLAConfig c;
  read_config_fields(c, reader);
  reader.finish();

  // validate_features: the empty cameras are VISUAL inputs (3, 480, 640), added once.
  for (int64_t i = 0; i < c.empty_cameras; ++i) {
    std::string key = "observation.images.empty_camera_" + std::to_string(i);
    bool present = std::any_of(c.input_features.begin(), c.input_features.end(),
                               [&](const PolicyFeature& f) { return f.key == key; });
    if (!present) c.input_features.push_back({key, "VISUAL", {3, 480, 640}});
  }
  c.validate();
  return c;
}

std::optional<std::pair<int64_t, int64_t>> SmolVLAConfig::resize_height_width() const {
  if (resize_imgs_with_padding.empty()) return std::nullopt;
  return std::make_pair(resize_imgs_with_padding[1], resize_imgs_with_padding[0]);
}

void SmolVLAConfig::validate() const {
  const std::string where = kWhere;
  auto fail = [&](const std::string& message, const std::string& hint = {}) {
    throw ConfigError(where + ": " + message, hint);
  };
  auto not_implemented = [&](const std::string& message) {
    throw util::NotImplemented(where + ": " + message + " is not implemented in lrhost");
  };
  // configuration_smolvla.py __post_init__.
  if (n_action_steps > chunk_size)
    fail("'n_action_steps' (" + std::to_string(n_action_steps) + ") must not exceed 'chunk_size' (" +
         std::to_string(chunk_size) + "), the number of actions predicted per invocation");
  if (use_delta_joint_actions_aloha)
    fail("'use_delta_joint_actions_aloha' is not ported in LeRobot either (it raises NotImplementedError); use false");

  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) fail(std::string("'") + key + "' must be a positive integer, got " + std::to_string(value));
  };
  positive("chunk_size", chunk_size);
  positive("n_action_steps", n_action_steps);
  positive("max_state_dim", max_state_dim);
  positive("max_action_dim", max_action_dim);
  positive("tokenizer_max_length", tokenizer_max_length);
  positive("num_steps", num_steps);
  positive("num_vlm_layers", num_vlm_layers);
  if (empty_cameras < 0) fail("'empty_cameras' must be >= 0, got " + std::to_string(empty_cameras));
  if (n_obs_steps != 1)
    fail("SmolVLA reads one observation step: 'n_obs_steps' must be 1, got " + std::to_string(n_obs_steps));
  if (!resize_imgs_with_padding.empty() && (resize_imgs_with_padding[0] <= 0 || resize_imgs_with_padding[1] <= 0))
    fail("'resize_imgs_with_padding' must be two positive sizes [width, height] or null");
  if (!(expert_width_multiplier > 0)) fail("'expert_width_multiplier' must be > 0");
  if (!(min_period > 0 && max_period > 0)) fail("'min_period' and 'max_period' must be > 0");
  if (optimizer_betas.size() != 2) fail("'optimizer_betas' must be two numbers [beta1, beta2]");
  if (attention_mode != "cross_attn" && attention_mode != "self_attn")
    fail("'attention_mode' must be 'cross_attn' or 'self_attn', got '" + attention_mode + "'");
  if (!(vision_cache_max_gib > 0)) fail("'vision_cache_max_gib' must be > 0");
  if (cache_vision_features && !freeze_vision_encoder && !train_expert_only)
    fail(
        "'cache_vision_features' needs a frozen vision tower (freeze_vision_encoder or train_expert_only): a "
        "trainable tower's output changes every step",
        "set policy.cache_vision_features=false");
  if (!use_cache) fail("'use_cache' must be true: the cross-attention expert layers read the prefix from the cache");

  // What lrhost does not implement (LeRobot has it): say so instead of computing something else.
  if (adapt_to_pi_aloha) not_implemented("'adapt_to_pi_aloha' = true (Aloha joint flips and gripper remapping)");
  if (add_image_special_tokens) not_implemented("'add_image_special_tokens' = true");
  if (compile_model) not_implemented("'compile_model' = true (torch.compile)");

  // validate_features and the features SmolVLA reads.
  if (image_features().empty())
    fail("input_features needs at least one VISUAL feature (observation.images.*)",
         "SmolVLA's prefix starts with the camera tokens; build it from a dataset with a camera");
  if (!robot_state_feature()) fail("input_features needs 'observation.state' (STATE)");
  if (!action_feature()) fail("output_features needs an ACTION feature named 'action'");
  for (const auto* feature : {robot_state_feature(), action_feature()})
    if (feature->shape.size() != 1)
      fail("'" + feature->key + "' must be a vector feature (shape [n]), got " + nlohmann::json(feature->shape).dump());
  if (robot_state_feature()->shape[0] > max_state_dim)
    fail("'observation.state' has " + std::to_string(robot_state_feature()->shape[0]) +
             " dimensions, more than 'max_state_dim' = " + std::to_string(max_state_dim),
         "LeRobot pads the state to max_state_dim and never truncates; raise max_state_dim");
  if (action_feature()->shape[0] > max_action_dim)
    fail("'action' has " + std::to_string(action_feature()->shape[0]) +
             " dimensions, more than 'max_action_dim' = " + std::to_string(max_action_dim),
         "LeRobot pads actions to max_action_dim and never truncates; raise max_action_dim");
  for (const auto& camera : image_features())
    if (camera.shape.size() != 3 || camera.shape[0] != 3)
      fail("camera '" + camera.key + "' must have shape [3, H, W], got " + nlohmann::json(camera.shape).dump());
}

nlohmann::ordered_json SmolVLAConfig::to_json() const {
  return write_config_fields(*this, "smolvla");
}

nlohmann::ordered_json SmolVLAConfig::to_recipe_json() const {
  return write_config_fields(*this, "smolvla", /*with_lrhost_only=*/true);
}

// vlm_model_name is not among them: it names where the VLM's config and tokenizer are (offline, a
// local copy of the same VLM), and loading checks every weight's shape anyway.
const std::vector<std::string>& SmolVLAConfig::weight_shape_fields() {
  static const std::vector<std::string> fields = config_field_names<SmolVLAConfig>(&FieldTraits::shapes_weights);
  return fields;
}

}  // namespace lrhost::policy::smolvla
