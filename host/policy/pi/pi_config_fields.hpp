// The fields LeRobot 0.6.1's PI0Config and PI05Config share (configuration_pi0.py and
// configuration_pi05.py declare the same fields in the same order; pi05 differs in the defaults of
// tokenizer_max_length and normalization_mapping, set by its constructor, and in where
// tokenizer_max_length sits), with the one field list both configs' from_json / to_json run on
// (config_fields.hpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/config_fields.hpp"
#include "host/policy/pi/pi_config_checks.hpp"

namespace lrhost::policy::pi {

struct PiConfigFields : PretrainedConfigFields {
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
  NormalizationMapping normalization_mapping{{"VISUAL", "IDENTITY"}, {"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}};
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
  int64_t tokenizer_max_length = 48;
  // lrhost's own: the layer geometry when not LeRobot's fixed one (PaliGemma So400m + Gemma-2B, expert
  // Gemma-300M): a geometry JSON file, a folder holding geometry.json, or a shipped asset
  // "lrhost/<name>" (pi_geometry.hpp). Tiny models for tests and the out-of-the-box recipes.
  std::string geometry;
  // lrhost's own: the tokenizer LeRobot hard-codes (processor_pi0.py / processor_pi05.py), a folder or
  // a cached hub id; never downloaded.
  std::string tokenizer_name = "google/paligemma-3b-pt-224";

  // Where tokenizer_max_length sits in config.json: PI05Config declares it first after
  // empty_cameras (a second declaration keeps that position), PI0Config last.
  enum class TokenizerLengthAt { after_empty_cameras, last };

  // Every field once, PreTrainedConfig's first, in LeRobot's order. The variants fix the layer
  // geometry and image_resolution SigLIP's position embeddings; the padded dims the projections.
  template <class Self, class F>
  static void pi_fields(Self& c, F&& f, TokenizerLengthAt tokenizer_length_at) {
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
    if (tokenizer_length_at == TokenizerLengthAt::after_empty_cameras)
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
    if (tokenizer_length_at == TokenizerLengthAt::last) f("tokenizer_max_length", c.tokenizer_max_length);
    f("geometry", c.geometry, {.shapes_weights = true, .lrhost_only = true});
    f("tokenizer_name", c.tokenizer_name, {.lrhost_only = true});
  }
  bool operator==(const PiConfigFields&) const = default;
};

// PI0Config::from_json / PI05Config::from_json: every field read strictly, then LeRobot's
// __post_init__ checks and validate_features (empty cameras, padded state/action when absent).
template <class Config>
Config read_pi_config(const nlohmann::json& table, const std::string& type, const PolicyFeatures& dataset_features) {
  FieldReader reader(table, "policy '" + type + "'", dataset_features);
  reader.expect_type(type);
  Config c;
  read_config_fields(c, reader);
  reader.finish();
  validate_pi_config(c, "policy '" + type + "'");  // before the features use image_resolution and the padded dims
  complete_pi_features(c);
  return c;
}

}  // namespace lrhost::policy::pi
