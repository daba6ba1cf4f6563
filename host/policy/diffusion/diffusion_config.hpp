// The configuration of the `diffusion` policy: LeRobot's PreTrainedConfig base fields followed by
// DiffusionConfig's fields, in LeRobot HEAD's dataclass order and with HEAD's defaults (horizon 64,
// 32 action steps, BatchNorm ResNet-18 per camera), read strictly from a recipe table or a
// config.json and written back as config.json. Validation is LeRobot's __post_init__ and
// validate_features plus what LeRobot only finds out when it builds or runs the modules (group
// counts dividing channels, an odd kernel, a known beta schedule); lrhost-specific limits
// (ResNet-18 only, backbone weights from a local file, never downloaded) are reported
// as such.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/config_fields.hpp"

namespace lrhost::policy::diffusion {

// The PreTrainedConfig fields (configs/policies.py) come first, from the base.
struct DiffusionConfig : PretrainedConfigFields {
  // DiffusionConfig overrides PreTrainedConfig's n_obs_steps default; the field keeps its place first.
  DiffusionConfig() { n_obs_steps = 2; }

  // DiffusionConfig (policies/diffusion/configuration_diffusion.py).
  int64_t horizon = 64;
  int64_t n_action_steps = 32;
  NormalizationMapping normalization_mapping{{"VISUAL", "MEAN_STD"}, {"STATE", "MIN_MAX"}, {"ACTION", "MIN_MAX"}};
  int64_t drop_n_last_frames = 7;
  std::string vision_backbone = "resnet18";
  std::optional<std::vector<int64_t>> resize_shape;  // (H, W)
  double crop_ratio = 1.0;
  // (H, W). Derived from resize_shape * crop_ratio when resize_shape is set (LeRobot's __post_init__
  // overwrites it, so a read config already holds the derived value).
  std::optional<std::vector<int64_t>> crop_shape;
  bool crop_is_random = true;
  // LeRobot's default names torchvision's ImageNet weights (ResNet18_Weights.IMAGENET1K_V1, a download);
  // lrhost's default for a table without the key is none (random init; the shipped recipes hold "",
  // and `lrhost lerobot-train` passes LeRobot's value: the spec's lerobot_values). A value is that
  // name, read from the local torch hub cache, or a local .safetensors/.pth file holding a torchvision
  // resnet18 state_dict (policy/vision/backbone_weights.hpp).
  std::optional<std::string> pretrained_backbone_weights;
  bool use_group_norm = false;
  int64_t spatial_softmax_num_keypoints = 32;
  bool use_separate_rgb_encoder_per_camera = true;
  std::vector<int64_t> down_dims{512, 1024, 2048};
  int64_t kernel_size = 5;
  int64_t n_groups = 8;
  int64_t diffusion_step_embed_dim = 128;
  bool use_film_scale_modulation = true;
  bool gradient_checkpointing = false;
  std::string noise_scheduler_type = "DDPM";
  int64_t num_train_timesteps = 100;
  std::string beta_schedule = "squaredcos_cap_v2";
  double beta_start = 0.0001;
  double beta_end = 0.02;
  std::string prediction_type = "epsilon";
  bool clip_sample = true;
  double clip_sample_range = 1.0;
  std::optional<int64_t> num_inference_steps;  // null: num_train_timesteps
  // torch.compile of the U-Net in LeRobot; a speed option only, accepted and not applied here.
  bool compile_model = false;
  std::string compile_mode = "reduce-overhead";
  bool do_mask_loss_for_padding = false;
  double optimizer_lr = 1e-4;
  std::vector<double> optimizer_betas{0.95, 0.999};
  double optimizer_eps = 1e-8;
  double optimizer_weight_decay = 1e-6;
  std::string scheduler_name = "cosine";
  int64_t scheduler_warmup_steps = 500;

  // Every field once, PreTrainedConfig's first, in LeRobot's order: f("name", c.member, {traits}).
  // The one list behind from_json, to_json and weight_shape_fields (config_fields.hpp).
  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    PretrainedConfigFields::fields(c, f, /*n_obs_steps_shapes_weights=*/true);
    f("horizon", c.horizon);
    f("n_action_steps", c.n_action_steps);
    f("normalization_mapping", c.normalization_mapping);
    f("drop_n_last_frames", c.drop_n_last_frames);
    f("vision_backbone", c.vision_backbone, {.shapes_weights = true});
    f("resize_shape", c.resize_shape, kHeightWidth);
    f("crop_ratio", c.crop_ratio, {.shapes_weights = true});
    f("crop_shape", c.crop_shape, kHeightWidth);
    f("crop_is_random", c.crop_is_random);
    f("pretrained_backbone_weights", c.pretrained_backbone_weights, {.text_null = true});
    f("use_group_norm", c.use_group_norm, {.shapes_weights = true});
    f("spatial_softmax_num_keypoints", c.spatial_softmax_num_keypoints, {.shapes_weights = true});
    f("use_separate_rgb_encoder_per_camera", c.use_separate_rgb_encoder_per_camera, {.shapes_weights = true});
    f("down_dims", c.down_dims, {.shapes_weights = true});
    f("kernel_size", c.kernel_size, {.shapes_weights = true});
    f("n_groups", c.n_groups);
    f("diffusion_step_embed_dim", c.diffusion_step_embed_dim, {.shapes_weights = true});
    f("use_film_scale_modulation", c.use_film_scale_modulation, {.shapes_weights = true});
    f("gradient_checkpointing", c.gradient_checkpointing);
    f("noise_scheduler_type", c.noise_scheduler_type);
    f("num_train_timesteps", c.num_train_timesteps);
    f("beta_schedule", c.beta_schedule);
    f("beta_start", c.beta_start);
    f("beta_end", c.beta_end);
    f("prediction_type", c.prediction_type);
    f("clip_sample", c.clip_sample);
    f("clip_sample_range", c.clip_sample_range);
    f("num_inference_steps", c.num_inference_steps);
    f("compile_model", c.compile_model);
    f("compile_mode", c.compile_mode);
    f("do_mask_loss_for_padding", c.do_mask_loss_for_padding);
    f("optimizer_lr", c.optimizer_lr);
    f("optimizer_betas", c.optimizer_betas);
    f("optimizer_eps", c.optimizer_eps);
    f("optimizer_weight_decay", c.optimizer_weight_decay);
    f("scheduler_name", c.scheduler_name);
    f("scheduler_warmup_steps", c.scheduler_warmup_steps);
  }
  bool operator==(const DiffusionConfig&) const = default;

  // Reads every field strictly (unknown keys and wrong types are ConfigErrors), applies LeRobot's
  // __post_init__ (crop_shape from resize_shape and crop_ratio) and validates. Features come from
  // the table's input_features/output_features when non-empty, else from `dataset_features`.
  static DiffusionConfig from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features = {});
  // config.json content: "type" first, then every field in LeRobot's order.
  nlohmann::ordered_json to_json() const;
  // The fields that shape Diffusion's weights (the observation window sizes the U-Net's conditioning,
  // the image size the spatial softmax's grid, the encoder choices its parameters and buffers): a
  // pretrained Diffusion policy cannot change them.
  static const std::vector<std::string>& weight_shape_fields();
  // LeRobot's checks; throws util::ConfigError (or util::NotImplemented for what lrhost lacks).
  void validate() const;

  // An image size: it shapes the spatial softmax's grid, and is an (H, W) pair or null.
  static constexpr FieldTraits kHeightWidth{
      .shapes_weights = true, .length = 2, .expected = "a pair of integers [height, width] or null"};

  // The number of reverse diffusion steps at inference (num_inference_steps or num_train_timesteps).
  int64_t inference_steps() const { return num_inference_steps.value_or(num_train_timesteps); }
};

}  // namespace lrhost::policy::diffusion
