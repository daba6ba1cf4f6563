// GR00T config: strict reading, LeRobot's __post_init__ / validate_features, config.json output.
#include "host/policy/groot/groot_config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "host/util/error.hpp"

namespace lrhost::policy::groot {
namespace {

const char* kGrootWhere = "policy 'groot'";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

GrootConfig GrootConfig::from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features) {
  FieldReader reader(table, kGrootWhere, dataset_features);
  reader.expect_type("groot");
  GrootConfig c;
  read_config_fields(c, reader);
  reader.finish();
  // normalize_groot_action_decode_transform, then the "auto" default (configuration_groot.py:381-396).
  if (c.action_decode_transform) {
    const std::string value = lower(*c.action_decode_transform);
    if (value == "none" || value.empty())
      c.action_decode_transform.reset();
    else if (value == "auto" || value == "libero")
      c.action_decode_transform = value;
    else
      throw util::ConfigError(std::string(kGrootWhere) + ": action_decode_transform = '" + *c.action_decode_transform +
                              "': unsupported (supported: none, auto, libero)");
  }
  if (c.action_decode_transform == "auto")
    c.action_decode_transform = c.embodiment_tag == "libero_sim" ? std::optional<std::string>("libero") : std::nullopt;
  // validate_features: at least one camera; state / action of max_*_dim when absent.
  if (c.image_features().empty())
    throw util::ConfigError(
        std::string(kGrootWhere) + ": GR00T needs at least one VISUAL input feature",
        "give the policy a dataset with a camera, or input_features with an observation.images.* entry");
  if (!c.robot_state_feature()) c.input_features.push_back({"observation.state", "STATE", {c.max_state_dim}});
  if (!c.action_feature()) c.output_features.push_back({"action", "ACTION", {c.max_action_dim}});
  c.validate();
  return c;
}

void GrootConfig::validate() const {
  const std::string where = kGrootWhere;
  auto fail = [&](const std::string& message, const std::string& hint = {}) {
    throw util::ConfigError(where + ": " + message, hint);
  };
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) fail(std::string("'") + key + "' must be a positive integer, got " + std::to_string(value));
  };
  positive("chunk_size", chunk_size);
  positive("n_action_steps", n_action_steps);
  positive("max_state_dim", max_state_dim);
  positive("max_action_dim", max_action_dim);
  if (n_action_steps > chunk_size)
    fail("n_action_steps (" + std::to_string(n_action_steps) + ") cannot exceed chunk_size (" +
         std::to_string(chunk_size) + ")");
  // LeRobot remaps these N1.5-era values to N1.7's with a warning; lrhost does not change a value the
  // user typed.
  struct Legacy {
    const char* key;
    int64_t value, n1_7;
  };
  for (const Legacy& legacy : {Legacy{"max_state_dim", max_state_dim == 64 ? 64 : 0, 132},
                               Legacy{"max_action_dim", max_action_dim == 32 ? 32 : 0, 132},
                               Legacy{"chunk_size", chunk_size == 50 ? 50 : 0, 40},
                               Legacy{"n_action_steps", n_action_steps == 50 ? 50 : 0, 40}})
    if (legacy.value)
      fail(std::string(legacy.key) + " = " + std::to_string(legacy.value) +
               " is a GR00T N1.5-era default, which LeRobot 0.6.1 silently remaps to " + std::to_string(legacy.n1_7),
           std::string("set ") + legacy.key + "=" + std::to_string(legacy.n1_7) + " (GR00T N1.7's)");
  if (image_size != std::vector<int64_t>{256, 256})
    fail(
        "image_size is deprecated in LeRobot 0.6.1 and not used (the image sizes come from the base checkpoint's "
        "processor_config.json); leave it at [256, 256]");
  const std::string base = lower(base_model_path);
  if (base.find("n1.5") != std::string::npos || base.find("n1_5") != std::string::npos)
    fail("base_model_path '" + base_model_path +
         "' looks like a GR00T N1.5 checkpoint; LeRobot 0.6.1 and lrhost "
         "run GR00T N1.7 only");
  if (const auto* state = robot_state_feature(); state && !state->shape.empty() && state->shape[0] > max_state_dim)
    fail("State dimension " + std::to_string(state->shape[0]) + " exceeds max_state_dim " +
         std::to_string(max_state_dim));
  if (const auto* action = action_feature(); action && !action->shape.empty() && action->shape[0] > max_action_dim)
    fail("Action dimension " + std::to_string(action->shape[0]) + " exceeds max_action_dim " +
         std::to_string(max_action_dim));
  if (tune_top_llm_layers < 0) fail("tune_top_llm_layers must be >= 0, got " + std::to_string(tune_top_llm_layers));
  if (num_inference_timesteps && *num_inference_timesteps <= 0)
    fail("num_inference_timesteps must be positive, got " + std::to_string(*num_inference_timesteps));
  if (warmup_ratio < 0 || warmup_ratio > 1) fail("warmup_ratio must be in [0, 1], got " + std::to_string(warmup_ratio));
  if (n_obs_steps != 1) fail("n_obs_steps must be 1 (GR00T N1.7 reads one frame), got " + std::to_string(n_obs_steps));
  if (use_relative_actions)
    throw util::NotImplemented(where +
                               ": use_relative_actions = true (relative action chunks) is not implemented in lrhost");
  if (!model_params_fp32)
    throw util::NotImplemented(where +
                               ": model_params_fp32 = false (the checkpoint's own dtypes) is not implemented "
                               "in lrhost; GR00T trains fp32 parameters under bf16 autocast");
  // The deprecated fields LeRobot parses and ignores: a value other than the default would be ignored.
  auto deprecated = [&](const char* key, bool at_default, const std::string& hint) {
    if (!at_default)
      fail(std::string("'") + key + "' is deprecated in LeRobot 0.6.1's GrootConfig and ignored there", hint);
  };
  deprecated("lora_rank", lora_rank == 0, "train LoRA adapters with policy.peft (lerobot-train: --peft.*)");
  deprecated("lora_alpha", lora_alpha == 16, "train LoRA adapters with policy.peft (lerobot-train: --peft.*)");
  deprecated("lora_dropout", lora_dropout == 0.1, "train LoRA adapters with policy.peft (lerobot-train: --peft.*)");
  deprecated("lora_full_model", !lora_full_model, "train LoRA adapters with policy.peft (lerobot-train: --peft.*)");
  deprecated("batch_size", batch_size == 32, "set the run's batch_size instead");
  deprecated("dataset_paths", !dataset_paths, "set the recipe's dataset instead");
  deprecated("dataloader_num_workers", dataloader_num_workers == 8, "set the recipe's num_workers instead");
  deprecated("save_steps", save_steps == 1000, "set the recipe's save_freq instead");
  deprecated("resume", !resume, "resume a run with lrhost --resume");
  if (max_steps <= 0) fail("max_steps must be positive (it sets the warmup), got " + std::to_string(max_steps));
}

nlohmann::ordered_json GrootConfig::to_json() const {
  return write_config_fields(*this, "groot");
}

nlohmann::ordered_json GrootConfig::to_recipe_json() const {
  return write_config_fields(*this, "groot", /*with_lrhost_only=*/true);
}

const std::vector<std::string>& GrootConfig::weight_shape_fields() {
  static const std::vector<std::string> fields = config_field_names<GrootConfig>(&FieldTraits::shapes_weights);
  return fields;
}

int64_t GrootConfig::action_steps(int64_t model_action_horizon) const {
  return std::min(chunk_size, model_action_horizon);
}

int64_t GrootConfig::warmup_steps() const {
  return static_cast<int64_t>(std::ceil(static_cast<double>(max_steps) * warmup_ratio));
}

nlohmann::ordered_json GrootConfig::optimizer_preset() const {
  // AdamWConfig(lr, betas, eps, weight_decay, grad_clip_norm=1.0) (configuration_groot.py:480-489).
  return {{"type", "adamw"},          {"lr", optimizer_lr},   {"weight_decay", optimizer_weight_decay},
          {"betas", optimizer_betas}, {"eps", optimizer_eps}, {"grad_clip_norm", 1.0}};
}

nlohmann::ordered_json GrootConfig::scheduler_preset() const {
  // DiffuserSchedulerConfig(name="cosine", num_warmup_steps=ceil(max_steps * warmup_ratio)): diffusers'
  // cosine schedule over the run's steps, lrhost's cosine_with_warmup.
  return {{"type", "cosine_with_warmup"}, {"warmup_steps", warmup_steps()}};
}

}  // namespace lrhost::policy::groot
