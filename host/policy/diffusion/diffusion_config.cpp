// Diffusion config: strict reading, LeRobot's __post_init__ and validation, and config.json output.
#include "host/policy/diffusion/diffusion_config.hpp"

#include <algorithm>
#include <cmath>

#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy::diffusion {
namespace {

const char* kWhere = "policy 'diffusion'";

using util::ConfigError;

std::string shape_text(const std::vector<int64_t>& shape) {
  return nlohmann::json(shape).dump();
}

}  // namespace

DiffusionConfig DiffusionConfig::from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features) {
  FieldReader reader(table, kWhere, dataset_features);
  reader.expect_type("diffusion");
  DiffusionConfig c;
  read_config_fields(c, reader);
  reader.finish();

  // __post_init__: with a resize, the crop follows from crop_ratio (and is off at ratio 1.0),
  // whatever crop_shape said. The ranges are checked first, as LeRobot does.
  if (c.resize_shape && ((*c.resize_shape)[0] <= 0 || (*c.resize_shape)[1] <= 0))
    throw ConfigError(std::string(kWhere) + ": 'resize_shape' must be a pair of positive integers, got " +
                      shape_text(*c.resize_shape));
  if (!(c.crop_ratio > 0 && c.crop_ratio <= 1.0))
    throw ConfigError(std::string(kWhere) + ": 'crop_ratio' must be in (0, 1], got " + std::to_string(c.crop_ratio));
  if (c.resize_shape) {
    if (c.crop_ratio < 1.0)
      c.crop_shape =
          std::vector<int64_t>{static_cast<int64_t>(static_cast<double>((*c.resize_shape)[0]) * c.crop_ratio),
                               static_cast<int64_t>(static_cast<double>((*c.resize_shape)[1]) * c.crop_ratio)};
    else
      c.crop_shape.reset();
  }
  c.validate();
  return c;
}

void DiffusionConfig::validate() const {
  const std::string where = kWhere;
  auto fail = [&](const std::string& message, const std::string& hint = {}) {
    throw ConfigError(where + ": " + message, hint);
  };
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) fail(std::string("'") + key + "' must be a positive integer, got " + std::to_string(value));
  };

  // configuration_diffusion.py __post_init__.
  if (vision_backbone.rfind("resnet", 0) != 0)
    fail("'vision_backbone' must be one of the ResNet variants, got '" + vision_backbone + "'");
  if (prediction_type != "epsilon" && prediction_type != "sample")
    fail("'prediction_type' must be one of 'epsilon', 'sample', got '" + prediction_type + "'");
  if (noise_scheduler_type != "DDPM" && noise_scheduler_type != "DDIM")
    fail("'noise_scheduler_type' must be one of 'DDPM', 'DDIM', got '" + noise_scheduler_type + "'");
  if (resize_shape && (resize_shape->size() != 2 || (*resize_shape)[0] <= 0 || (*resize_shape)[1] <= 0))
    fail("'resize_shape' must be a pair of positive integers, got " + shape_text(*resize_shape));
  if (!(crop_ratio > 0 && crop_ratio <= 1.0)) fail("'crop_ratio' must be in (0, 1], got " + std::to_string(crop_ratio));
  if (crop_shape && (crop_shape->size() != 2 || (*crop_shape)[0] <= 0 || (*crop_shape)[1] <= 0))
    fail("'crop_shape' must have positive dimensions, got " + shape_text(*crop_shape));
  if (down_dims.empty()) fail("'down_dims' must list at least one U-Net stage width");
  if (down_dims.size() > 20) fail("'down_dims' has " + std::to_string(down_dims.size()) + " stages; at most 20");
  const int64_t downsampling_factor = int64_t{1} << down_dims.size();
  if (horizon % downsampling_factor != 0)
    fail("'horizon' (" + std::to_string(horizon) +
             ") must be an integer multiple of the U-Net's downsampling factor 2^len(down_dims) = " +
             std::to_string(downsampling_factor),
         "down_dims = " + shape_text(down_dims));

  // Values LeRobot only rejects when it builds or runs the modules (or the noise scheduler).
  positive("n_obs_steps", n_obs_steps);
  positive("horizon", horizon);
  positive("n_action_steps", n_action_steps);
  if (n_action_steps > horizon - n_obs_steps + 1)
    fail("'n_action_steps' (" + std::to_string(n_action_steps) +
             ") must be <= horizon - n_obs_steps + 1 = " + std::to_string(horizon - n_obs_steps + 1),
         "the executed actions start at the current observation, n_obs_steps - 1 steps into the horizon");
  if (drop_n_last_frames < 0) fail("'drop_n_last_frames' must be >= 0, got " + std::to_string(drop_n_last_frames));
  positive("spatial_softmax_num_keypoints", spatial_softmax_num_keypoints);
  positive("n_groups", n_groups);
  for (auto dim : down_dims) {
    if (dim <= 0) fail("'down_dims' must be positive, got " + shape_text(down_dims));
    if (dim % n_groups != 0)
      fail("every 'down_dims' entry must be divisible by 'n_groups' (" + std::to_string(n_groups) + "), got " +
           shape_text(down_dims));
  }
  // The final convolution block keeps DiffusionConv1dBlock's default of 8 groups.
  if (down_dims[0] % 8 != 0)
    fail("'down_dims[0]' must be divisible by 8 (the group count of the U-Net's final block), got " +
         std::to_string(down_dims[0]));
  if (kernel_size <= 0 || kernel_size % 2 == 0)
    fail("'kernel_size' must be a positive odd integer (the convolutions pad kernel_size // 2), got " +
         std::to_string(kernel_size));
  if (diffusion_step_embed_dim < 4 || diffusion_step_embed_dim % 2 != 0)
    fail("'diffusion_step_embed_dim' must be an even integer >= 4 (half sine, half cosine), got " +
         std::to_string(diffusion_step_embed_dim));
  positive("num_train_timesteps", num_train_timesteps);
  if (num_inference_steps && (*num_inference_steps <= 0 || *num_inference_steps > num_train_timesteps))
    fail("'num_inference_steps' must be in [1, num_train_timesteps = " + std::to_string(num_train_timesteps) +
         "], got " + std::to_string(*num_inference_steps));
  std::vector<std::string> schedules{"linear", "scaled_linear", "squaredcos_cap_v2"};
  if (noise_scheduler_type == "DDPM") schedules.push_back("sigmoid");  // diffusers' DDPMScheduler only
  if (std::find(schedules.begin(), schedules.end(), beta_schedule) == schedules.end())
    fail("'beta_schedule' must be one of " + util::quoted_list(schedules) + " for the " + noise_scheduler_type +
         " scheduler, got '" + beta_schedule + "'");
  if (clip_sample && !(clip_sample_range > 0))
    fail("'clip_sample_range' must be > 0, got " + std::to_string(clip_sample_range));
  if (optimizer_betas.size() != 2)
    fail("'optimizer_betas' must be two numbers [beta1, beta2], got " + nlohmann::json(optimizer_betas).dump());

  // validate_features and the features the model reads.
  auto cameras = image_features();
  if (cameras.empty() && !env_state_feature())
    fail("you must provide at least one image or the environment state among the inputs",
         "input_features needs a VISUAL feature (observation.images.*) or observation.environment_state");
  if (!robot_state_feature())
    fail("input_features needs a STATE feature named 'observation.state' (it is part of the conditioning)");
  if (!action_feature())
    fail("output_features needs an ACTION feature named 'action'",
         "build the policy from a dataset with an 'action' feature, or set output_features");
  for (const auto* feature : {robot_state_feature(), env_state_feature(), action_feature()})
    if (feature && feature->shape.size() != 1)
      fail("'" + feature->key + "' must be a vector feature (shape [n]), got " + shape_text(feature->shape));
  for (const auto& camera : cameras) {
    if (camera.shape.size() != 3 || camera.shape[0] != 3)
      fail("camera '" + camera.key + "' must have shape [3, H, W] (ResNet-18 takes RGB), got " +
           shape_text(camera.shape));
    if (!resize_shape && crop_shape && ((*crop_shape)[0] > camera.shape[1] || (*crop_shape)[1] > camera.shape[2]))
      fail("'crop_shape' should fit within the image shapes, got " + shape_text(*crop_shape) +
           " for 'crop_shape' and " + shape_text(camera.shape) + " for '" + camera.key + "'");
    if (camera.shape != cameras.front().shape)
      fail("'" + camera.key + "' does not match '" + cameras.front().key + "', but all image shapes must match",
           "shapes " + shape_text(camera.shape) + " and " + shape_text(cameras.front().shape));
  }

  // Backbone: lrhost has torchvision's resnet18 trunk only (its weights are found when it is built).
  if (use_group_norm && pretrained_backbone_weights)
    fail(
        "you can't replace BatchNorm in a pretrained model without ruining the weights "
        "('use_group_norm' = true with 'pretrained_backbone_weights' = '" +
            *pretrained_backbone_weights + "')",
        "set use_group_norm = false, or pretrained_backbone_weights = null");
  if (!cameras.empty() && vision_backbone != "resnet18")
    throw util::NotImplemented(where + ": 'vision_backbone' = '" + vision_backbone +
                               "' is not implemented; lrhost has 'resnet18' only");
  if (gradient_checkpointing)
    throw util::NotImplemented(where + ": 'gradient_checkpointing' = true is not implemented",
                               "set gradient_checkpointing = false (it only trades memory for compute)");
}

nlohmann::ordered_json DiffusionConfig::to_json() const {
  return write_config_fields(*this, "diffusion");
}

const std::vector<std::string>& DiffusionConfig::weight_shape_fields() {
  static const std::vector<std::string> fields = config_field_names<DiffusionConfig>(&FieldTraits::shapes_weights);
  return fields;
}

}  // namespace lrhost::policy::diffusion
