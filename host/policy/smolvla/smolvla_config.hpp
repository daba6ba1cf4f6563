// The configuration of the `smolvla` policy: LeRobot's PreTrainedConfig base fields followed by
// SmolVLAConfig's fields (policies/smolvla/configuration_smolvla.py, LeRobot 0.6.1), in its dataclass
// order and with its defaults, read strictly from a recipe table or a config.json and written back
// as config.json. Validation is LeRobot's __post_init__ / validate_features (empty cameras become
// input features) plus what LeRobot only finds out while building or running the model; options
// lrhost does not implement (real-time chunking, Aloha adaptation, image special tokens,
// torch.compile) are errors that say so rather than being ignored.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/config_fields.hpp"

namespace lrhost::policy::smolvla {

struct SmolVLAConfig : PretrainedConfigFields {
  int64_t chunk_size = 50;
  int64_t n_action_steps = 50;
  NormalizationMapping normalization_mapping{{"VISUAL", "IDENTITY"}, {"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}};
  int64_t max_state_dim = 32;
  int64_t max_action_dim = 32;
  // Stored as (width, height), as LeRobot stores it; empty = no resize.
  std::vector<int64_t> resize_imgs_with_padding{512, 512};
  int64_t empty_cameras = 0;
  bool adapt_to_pi_aloha = false;
  bool use_delta_joint_actions_aloha = false;
  int64_t tokenizer_max_length = 48;
  int64_t num_steps = 10;
  bool use_cache = true;
  bool freeze_vision_encoder = true;
  bool train_expert_only = true;
  bool train_state_proj = true;
  double optimizer_lr = 1e-4;
  std::vector<double> optimizer_betas{0.9, 0.95};
  double optimizer_eps = 1e-8;
  double optimizer_weight_decay = 1e-10;
  double optimizer_grad_clip_norm = 10;
  int64_t scheduler_warmup_steps = 1000;
  int64_t scheduler_decay_steps = 30000;
  double scheduler_decay_lr = 2.5e-6;
  std::string vlm_model_name = "HuggingFaceTB/SmolVLM2-500M-Video-Instruct";
  bool load_vlm_weights = false;
  bool add_image_special_tokens = false;
  std::string attention_mode = "cross_attn";
  int64_t prefix_length = -1;
  std::string pad_language_to = "longest";
  int64_t num_expert_layers = -1;
  int64_t num_vlm_layers = 16;
  int64_t self_attn_every_n_layers = 2;
  double expert_width_multiplier = 0.75;
  double min_period = 4e-3;
  double max_period = 4.0;
  // Real-time chunking is not implemented: rtc_config is None, and a value is refused.
  AlwaysNull rtc_config;
  bool compile_model = false;
  std::string compile_mode = "max-autotune";

  // lrhost's own options, never written to config.json (LeRobot's config class would reject them):
  // the frozen vision tower's output cached per (camera, frame) for training (vision_feature_cache.hpp)
  // and the cache's bound on disk.
  bool cache_vision_features = false;
  double vision_cache_max_gib = 100.0;
  // Activation checkpointing (nn/activation_checkpoint.hpp) of each layer index of the VLM + expert
  // loop, and of each SigLIP encoder layer while the tower trains: a training forward keeps only the
  // layers' inputs and backward recomputes one layer at a time. LeRobot 0.6.1's SmolVLAConfig has no
  // such field (pi0/pi05's do, under this name), so it is lrhost's own here.
  bool gradient_checkpointing = false;

  // Every field once, PreTrainedConfig's first, in LeRobot's order, lrhost's own options last:
  // f("name", c.member, {traits}). The one list behind from_json, to_json, to_recipe_json and
  // weight_shape_fields (config_fields.hpp).
  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    PretrainedConfigFields::fields(c, f, /*n_obs_steps_shapes_weights=*/false);
    f("chunk_size", c.chunk_size);
    f("n_action_steps", c.n_action_steps);
    f("normalization_mapping", c.normalization_mapping);
    f("max_state_dim", c.max_state_dim, {.shapes_weights = true});
    f("max_action_dim", c.max_action_dim, {.shapes_weights = true});
    f("resize_imgs_with_padding", c.resize_imgs_with_padding,
      {.length = 2, .null_is_empty = true, .expected = "[width, height] or null"});
    f("empty_cameras", c.empty_cameras);
    f("adapt_to_pi_aloha", c.adapt_to_pi_aloha);
    f("use_delta_joint_actions_aloha", c.use_delta_joint_actions_aloha);
    f("tokenizer_max_length", c.tokenizer_max_length);
    f("num_steps", c.num_steps);
    f("use_cache", c.use_cache);
    f("freeze_vision_encoder", c.freeze_vision_encoder);
    f("train_expert_only", c.train_expert_only);
    f("train_state_proj", c.train_state_proj);
    f("optimizer_lr", c.optimizer_lr);
    f("optimizer_betas", c.optimizer_betas);
    f("optimizer_eps", c.optimizer_eps);
    f("optimizer_weight_decay", c.optimizer_weight_decay);
    f("optimizer_grad_clip_norm", c.optimizer_grad_clip_norm);
    f("scheduler_warmup_steps", c.scheduler_warmup_steps);
    f("scheduler_decay_steps", c.scheduler_decay_steps);
    f("scheduler_decay_lr", c.scheduler_decay_lr);
    f("vlm_model_name", c.vlm_model_name);
    f("load_vlm_weights", c.load_vlm_weights);
    f("add_image_special_tokens", c.add_image_special_tokens);
    f("attention_mode", c.attention_mode);
    f("prefix_length", c.prefix_length);
    f("pad_language_to", c.pad_language_to, {.one_of = {"longest", "max_length"}});
    f("num_expert_layers", c.num_expert_layers, {.shapes_weights = true});
    f("num_vlm_layers", c.num_vlm_layers, {.shapes_weights = true});
    f("self_attn_every_n_layers", c.self_attn_every_n_layers, {.shapes_weights = true});
    f("expert_width_multiplier", c.expert_width_multiplier, {.shapes_weights = true});
    f("min_period", c.min_period);
    f("max_period", c.max_period);
    f("rtc_config", c.rtc_config, {.refusal = "real-time chunking is not implemented in lrhost; use null"});
    f("compile_model", c.compile_model);
    f("compile_mode", c.compile_mode);
    f("cache_vision_features", c.cache_vision_features, {.lrhost_only = true});
    f("vision_cache_max_gib", c.vision_cache_max_gib, {.lrhost_only = true});
    f("gradient_checkpointing", c.gradient_checkpointing, {.lrhost_only = true});
  }
  bool operator==(const SmolVLAConfig&) const = default;

  // Reads every field strictly (unknown keys and wrong types are ConfigErrors). Features come from
  // the table's input_features/output_features when non-empty, else from `dataset_features`; the
  // empty cameras are then appended as LeRobot's validate_features does.
  static SmolVLAConfig from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features = {});
  // config.json content: "type" first, then every field in LeRobot's order (lrhost's own options
  // left out).
  nlohmann::ordered_json to_json() const;
  // The fields that shape SmolVLA's weights (the padded state/action projections, the VLM and the
  // expert's layer counts and widths): a pretrained SmolVLA cannot change them. chunk_size and the
  // image size can (no weight depends on them).
  static const std::vector<std::string>& weight_shape_fields();
  // to_json() plus lrhost's own options: the fields a recipe may set (lr.policy.defaults).
  nlohmann::ordered_json to_recipe_json() const;
  // LeRobot's checks and lrhost's limits; throws util::ConfigError or util::NotImplemented.
  void validate() const;

  bool cross_attention() const { return attention_mode.find("cross") != std::string::npos; }
  // resize_imgs_with_padding as (height, width), or nullopt for none.
  std::optional<std::pair<int64_t, int64_t>> resize_height_width() const;
};

}  // namespace lrhost::policy::smolvla
