// The configuration of the `groot` policy: LeRobot's PreTrainedConfig base fields followed by
// GrootConfig's (policies/groot/configuration_groot.py, LeRobot 0.6.1) in its dataclass order and with
// its defaults, read strictly from a recipe table or a config.json and written back as config.json.
// Validation is LeRobot's __post_init__ / validate_features; the N1.5-era values LeRobot remaps with a
// warning (max_*_dim 64/32, chunk 50, image 224) are refused here instead, naming the N1.7 value, and
// the deprecated fields LeRobot parses and ignores (lora_*, batch_size, ...) are refused when set to
// anything but their default: a silently ignored option is a wrong result. max_steps is kept: it
// still sets LeRobot's warmup (groot.md §6).
//
// Where the network's geometry comes from (lrhost's own fields): LeRobot reads the GR00TN17Config
// from base_model_path's config.json and hard-codes the Cosmos-Reason2-2B backbone; `geometry` names
// a folder (or a shipped asset "lrhost/<name>") holding that config.json and the backbone's
// backbone_config.json instead, for tiny models without a base checkpoint (groot_geometry.hpp).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/config_fields.hpp"

namespace lrhost::policy::groot {

inline constexpr const char* kGrootBaseModel = "nvidia/GR00T-N1.7-3B";
inline constexpr const char* kCosmosReason2 = "nvidia/Cosmos-Reason2-2B";
// lrhost's settings beside a saved folder's config.json that LeRobot's config cannot hold (geometry,
// tokenizer_name when not LeRobot's).
inline constexpr const char* kGrootSettingsFile = "groot_lrhost.json";

struct GrootConfig : PretrainedConfigFields {
  int64_t chunk_size = 40;
  int64_t n_action_steps = 40;
  int64_t max_state_dim = 132;
  int64_t max_action_dim = 132;
  // Not consulted by LeRobot (GR00T normalises in its pack step); kept as config.json holds it.
  NormalizationMapping normalization_mapping{{"VISUAL", "IDENTITY"}, {"STATE", "IDENTITY"}, {"ACTION", "IDENTITY"}};
  std::string base_model_path = kGrootBaseModel;                // null reads as LeRobot's default
  std::optional<std::string> action_decode_transform = "auto";  // resolved: "libero" for libero_sim, else null
  std::string embodiment_tag = "new_embodiment";
  bool tune_llm = false;
  bool tune_visual = false;
  bool tune_projector = true;
  bool tune_diffusion_model = true;
  bool tune_vlln = true;
  int64_t tune_top_llm_layers = 0;
  std::optional<int64_t> num_inference_timesteps;  // null: the checkpoint's
  std::optional<double> rtc_ramp_rate;             // null: the checkpoint's (real-time chunking only)
  bool use_flash_attention = false;
  bool use_relative_actions = false;
  std::optional<std::vector<std::string>> relative_exclude_joints = std::vector<std::string>{};
  double optimizer_lr = 1e-4;
  std::vector<double> optimizer_betas{0.9, 0.999};
  double optimizer_eps = 1e-8;
  double optimizer_weight_decay = 1e-5;
  double warmup_ratio = 0.05;
  bool use_bf16 = true;
  bool model_params_fp32 = true;
  // Deprecated in LeRobot 0.6.1: parsed, never used (refused unless at their defaults, but max_steps).
  std::vector<int64_t> image_size{256, 256};
  AlwaysNull tokenizer_assets_repo;
  int64_t lora_rank = 0;
  int64_t lora_alpha = 16;
  double lora_dropout = 0.1;
  bool lora_full_model = false;
  std::string video_backend = "decord";
  bool balance_dataset_weights = true;
  bool balance_trajectory_weights = true;
  std::optional<std::vector<std::string>> dataset_paths;
  std::string output_dir = "./tmp/gr00t";
  int64_t save_steps = 1000;
  int64_t max_steps = 10000;  // still LeRobot's warmup: ceil(max_steps * warmup_ratio)
  int64_t batch_size = 32;
  int64_t dataloader_num_workers = 8;
  std::string report_to = "wandb";
  bool resume = false;

  // lrhost's own options (never in config.json).
  // The network's geometry when not the base checkpoint's + Cosmos-Reason2-2B's (groot_geometry.hpp).
  std::string geometry;
  // The tokenizer and image processor of the VLM-encode step (LeRobot hard-codes Cosmos-Reason2-2B's).
  std::string tokenizer_name = kCosmosReason2;
  // Activation checkpointing of the DiT and vl_self_attention blocks (and the backbone's layers when
  // they train): LeRobot 0.6.1 has no such switch.
  bool gradient_checkpointing = false;

  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    PretrainedConfigFields::fields(c, f, /*n_obs_steps_shapes_weights=*/false);
    f("chunk_size", c.chunk_size);
    f("n_action_steps", c.n_action_steps);
    f("max_state_dim", c.max_state_dim, {.shapes_weights = true});
    f("max_action_dim", c.max_action_dim, {.shapes_weights = true});
    f("normalization_mapping", c.normalization_mapping);
    f("base_model_path", c.base_model_path, {.shapes_weights = true});
    f("action_decode_transform", c.action_decode_transform);
    f("embodiment_tag", c.embodiment_tag);
    f("tune_llm", c.tune_llm);
    f("tune_visual", c.tune_visual);
    f("tune_projector", c.tune_projector);
    f("tune_diffusion_model", c.tune_diffusion_model);
    f("tune_vlln", c.tune_vlln);
    f("tune_top_llm_layers", c.tune_top_llm_layers);
    f("num_inference_timesteps", c.num_inference_timesteps);
    f("rtc_ramp_rate", c.rtc_ramp_rate);
    f("use_flash_attention", c.use_flash_attention);
    f("use_relative_actions", c.use_relative_actions);
    f("relative_exclude_joints", c.relative_exclude_joints);
    f("optimizer_lr", c.optimizer_lr);
    f("optimizer_betas", c.optimizer_betas, {.length = 2});
    f("optimizer_eps", c.optimizer_eps);
    f("optimizer_weight_decay", c.optimizer_weight_decay);
    f("warmup_ratio", c.warmup_ratio);
    f("use_bf16", c.use_bf16);
    f("model_params_fp32", c.model_params_fp32);
    f("image_size", c.image_size, {.length = 2});
    f("tokenizer_assets_repo", c.tokenizer_assets_repo,
      {.refusal = "tokenizer_assets_repo only existed for GR00T N1.5 (LeRobot 0.6.1 refuses it too); use null"});
    f("lora_rank", c.lora_rank);
    f("lora_alpha", c.lora_alpha);
    f("lora_dropout", c.lora_dropout);
    f("lora_full_model", c.lora_full_model);
    f("video_backend", c.video_backend);
    f("balance_dataset_weights", c.balance_dataset_weights);
    f("balance_trajectory_weights", c.balance_trajectory_weights);
    f("dataset_paths", c.dataset_paths);
    f("output_dir", c.output_dir);
    f("save_steps", c.save_steps);
    f("max_steps", c.max_steps);
    f("batch_size", c.batch_size);
    f("dataloader_num_workers", c.dataloader_num_workers);
    f("report_to", c.report_to);
    f("resume", c.resume);
    f("geometry", c.geometry, {.shapes_weights = true, .lrhost_only = true});
    f("tokenizer_name", c.tokenizer_name, {.lrhost_only = true});
    f("gradient_checkpointing", c.gradient_checkpointing, {.lrhost_only = true});
  }
  bool operator==(const GrootConfig&) const = default;

  // Reads every field strictly; features from the table when non-empty, else `dataset_features`;
  // then __post_init__ (action_decode_transform resolved) and validate_features (state / action of
  // max_*_dim added when absent).
  static GrootConfig from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features = {});
  nlohmann::ordered_json to_json() const;
  nlohmann::ordered_json to_recipe_json() const;
  static const std::vector<std::string>& weight_shape_fields();
  // LeRobot's checks and lrhost's limits; throws util::ConfigError or util::NotImplemented.
  void validate() const;

  // LeRobot's action_delta_indices length: min(chunk_size, the model's action horizon).
  int64_t action_steps(int64_t model_action_horizon) const;
  // LeRobot's DiffuserSchedulerConfig warmup: ceil(max_steps * warmup_ratio).
  int64_t warmup_steps() const;
  // get_optimizer_preset / get_scheduler_preset as Policy::optimizer_preset / scheduler_preset say them
  // (the policy and the plan of an unbuilt one read these).
  nlohmann::ordered_json optimizer_preset() const;
  nlohmann::ordered_json scheduler_preset() const;
  bool libero_decode() const { return action_decode_transform == "libero"; }
};

}  // namespace lrhost::policy::groot
