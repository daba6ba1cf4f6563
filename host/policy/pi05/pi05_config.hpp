// The configuration of the `pi05` policy: LeRobot's PreTrainedConfig base fields followed by
// PI05Config's fields (policies/pi05/configuration_pi05.py, LeRobot 0.6.1) in its dataclass order and
// with its defaults (fields PI05Config redeclares, n_obs_steps and device, keep the base's position, as
// the dataclass does; tokenizer_max_length is declared twice and sits where it is first declared),
// read strictly from a recipe table or a config.json and written back as config.json. The fields are
// PI0Config's but for tokenizer_max_length (200) and QUANTILES normalization. Validation is LeRobot's
// __post_init__ / validate_features (pi_config_checks.hpp); options lrhost does not implement are
// errors that say so. Also pi05's processor pipelines (make_pi05_pre_post_processors).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/config_fields.hpp"
#include "host/policy/processor_pipeline.hpp"

namespace lrhost::policy::pi05 {

struct PI05Config : PretrainedConfigFields {
  std::string paligemma_variant = "gemma_2b";
  std::string action_expert_variant = "gemma_300m";
  std::string dtype = "float32";
  int64_t chunk_size = 50;
  int64_t n_action_steps = 50;
  int64_t max_state_dim = 32;
  int64_t max_action_dim = 32;
  int64_t num_inference_steps = 10;
  double time_sampling_beta_alpha = 1.5;
  double time_sampling_beta_beta = 1.0;
  double time_sampling_scale = 0.999;
  double time_sampling_offset = 0.001;
  double min_period = 4e-3;
  double max_period = 4.0;
  bool use_relative_actions = false;
  // A list in LeRobot (never None); null in a table keeps the default, as for every field.
  std::optional<std::vector<std::string>> relative_exclude_joints = std::vector<std::string>{"gripper"};
  std::optional<std::vector<std::string>> action_feature_names;
  AlwaysNull rtc_config;
  std::vector<int64_t> image_resolution{224, 224};  // (height, width)
  int64_t empty_cameras = 0;
  int64_t tokenizer_max_length = 200;
  NormalizationMapping normalization_mapping{{"VISUAL", "IDENTITY"}, {"STATE", "QUANTILES"}, {"ACTION", "QUANTILES"}};
  bool gradient_checkpointing = false;
  bool compile_model = false;
  std::string compile_mode = "max-autotune";
  bool freeze_vision_encoder = false;
  bool train_expert_only = false;
  double optimizer_lr = 2.5e-5;
  std::vector<double> optimizer_betas{0.9, 0.95};
  double optimizer_eps = 1e-8;
  double optimizer_weight_decay = 0.01;
  double optimizer_grad_clip_norm = 1.0;
  int64_t scheduler_warmup_steps = 1000;
  int64_t scheduler_decay_steps = 30000;
  double scheduler_decay_lr = 2.5e-6;

  // Every field once, PreTrainedConfig's first, in LeRobot's order: the one list behind from_json,
  // to_json and weight_shape_fields (config_fields.hpp). The variants fix the layer geometry and
  // image_resolution SigLIP's position embeddings; the padded dims the projections.
  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    PretrainedConfigFields::fields(c, f, /*n_obs_steps_shapes_weights=*/false);
    f("paligemma_variant", c.paligemma_variant, {.shapes_weights = true, .one_of = {"gemma_300m", "gemma_2b"}});
    f("action_expert_variant", c.action_expert_variant, {.shapes_weights = true, .one_of = {"gemma_300m", "gemma_2b"}});
    f("dtype", c.dtype, {.one_of = {"bfloat16", "float32"}});
    f("chunk_size", c.chunk_size);
    f("n_action_steps", c.n_action_steps);
    f("max_state_dim", c.max_state_dim, {.shapes_weights = true});
    f("max_action_dim", c.max_action_dim, {.shapes_weights = true});
    f("num_inference_steps", c.num_inference_steps);
    f("time_sampling_beta_alpha", c.time_sampling_beta_alpha);
    f("time_sampling_beta_beta", c.time_sampling_beta_beta);
    f("time_sampling_scale", c.time_sampling_scale);
    f("time_sampling_offset", c.time_sampling_offset);
    f("min_period", c.min_period);
    f("max_period", c.max_period);
    f("use_relative_actions", c.use_relative_actions);
    f("relative_exclude_joints", c.relative_exclude_joints);
    f("action_feature_names", c.action_feature_names);
    f("rtc_config", c.rtc_config, {.refusal = "real-time chunking is not implemented in lrhost; use null"});
    f("image_resolution", c.image_resolution, {.shapes_weights = true, .length = 2, .expected = "[height, width]"});
    f("empty_cameras", c.empty_cameras);
    f("tokenizer_max_length", c.tokenizer_max_length);
    f("normalization_mapping", c.normalization_mapping);
    f("gradient_checkpointing", c.gradient_checkpointing);
    f("compile_model", c.compile_model);
    f("compile_mode", c.compile_mode);
    f("freeze_vision_encoder", c.freeze_vision_encoder);
    f("train_expert_only", c.train_expert_only);
    f("optimizer_lr", c.optimizer_lr);
    f("optimizer_betas", c.optimizer_betas, {.length = 2});
    f("optimizer_eps", c.optimizer_eps);
    f("optimizer_weight_decay", c.optimizer_weight_decay);
    f("optimizer_grad_clip_norm", c.optimizer_grad_clip_norm);
    f("scheduler_warmup_steps", c.scheduler_warmup_steps);
    f("scheduler_decay_steps", c.scheduler_decay_steps);
    f("scheduler_decay_lr", c.scheduler_decay_lr);
  }
  bool operator==(const PI05Config&) const = default;

  // Reads every field strictly (unknown keys and wrong types are ConfigErrors naming the key).
  // Features come from the table when non-empty, else from `dataset_features`; then validate_features
  // (empty cameras, padded state/action when absent) and validate().
  static PI05Config from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features = {});
  nlohmann::ordered_json to_json() const;
  static const std::vector<std::string>& weight_shape_fields();
  // LeRobot's checks and lrhost's limits; throws util::ConfigError or util::NotImplemented.
  void validate() const;
};

// make_pi05_pre_post_processors: rename -> to_batch -> relative_actions -> normalizer (step 3) ->
// pi05_prepare_state_tokenizer (the prompt from the normalized state) -> tokenizer -> device;
// unnormalizer -> absolute_actions -> device.
ProcessorPipeline pi05_processor_pipeline();

}  // namespace lrhost::policy::pi05
