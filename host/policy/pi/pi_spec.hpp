// The registry entry pi0 and pi05 share (policy_spec.hpp), written once for both: config defaults
// (lrhost's geometry and tokenizer_name options included), weight-shape fields, the type's processor
// pipeline, the FSDP units — the Gemma decoder layers, gathered in (VLM, expert) pairs by the joint
// layer loop, and SigLIP's encoder layers (paligemma_with_expert.hpp) —, the plan without building at
// LeRobot's size (pi_plan.hpp), and recipes/<type>.lua for lerobot-train (its tiny-model defaults reset
// to LeRobot's).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "host/policy/pi/paligemma_with_expert.hpp"
#include "host/policy/pi/pi_geometry.hpp"
#include "host/policy/pi/pi_plan.hpp"
#include "host/policy/policy_spec.hpp"

namespace lrhost::policy::pi {

template <class Config, class PolicyType>
PolicySpec make_pi_spec(PiVariant variant, const std::string& type, ProcessorPipeline processors) {
  return PolicySpec{
      .type = type,
      .create = [](const nlohmann::json& config, const PolicyFeatures& features) -> std::shared_ptr<Policy> {
        return std::make_shared<PolicyType>(Config::from_json(config, features));
      },
      .default_config = [] { return Config{}.to_recipe_json(); },
      .weight_shape_fields = Config::weight_shape_fields(),
      .run_option_fields = {"tokenizer_name"},
      .processors = std::move(processors),
      .fsdp_wrap_module_types = {"GemmaDecoderLayer", "SiglipEncoderLayer"},
      // transformers' classes in LeRobot's PaliGemma + Gemma expert.
      .fsdp_lerobot_classes = {{"GemmaDecoderLayer", "GemmaDecoderLayer"},
                               {"SiglipEncoderLayer", "SiglipEncoderLayer"}},
      .fsdp_gather_group = layer_pair_of,
      .read_pretrained_extras = name_folder_geometry,
      .missing_pretrained_extras = missing_folder_geometry,
      .lerobot_train =
          LeRobotTrainMapping{.recipe = type + ".lua",
                              .deviating_fields = {"geometry", "tokenizer_name", "image_resolution", "chunk_size",
                                                   "n_action_steps", "tokenizer_max_length", "scheduler_warmup_steps"},
                              .optimizer_preset = "adamw",
                              .scheduler_preset = "cosine_decay_with_warmup"},
      // modeling_pi0.py's and modeling_pi05.py's _get_default_peft_targets (one string): the expert's
      // q/v and the projections. pi05 has no state_proj and names its time MLP time_mlp_in/_out, so
      // LeRobot's default leaves pi05's time MLP frozen; kept as LeRobot has it.
      .lerobot_peft =
          LeRobotPeft{
              .default_targets =
                  R"((.*\.gemma_expert\..*\.self_attn\.(q|v)_proj|model\.(state_proj|action_in_proj|action_out_proj|action_time_mlp_in|action_time_mlp_out)))",
              .base_model_class = variant == PiVariant::pi05 ? "PI05Policy" : "PI0Policy",
              .parent_library = "lerobot.policies." + type + ".modeling_" + type},
      // openpi's gemma_2b_lora / gemma_300m_lora (openpi:src/openpi/models/gemma.py, pi0_config.py): rank
      // 16 / alpha 16 on the VLM's attention and MLP, rank 32 / alpha 32 on the expert's; the freeze
      // filter leaves SigLIP, the projector and the policy's projections trained in full.
      .openpi_lora =
          OpenpiLora{
              .targets =
                  R"(.*\.(paligemma\.model\.language_model|gemma_expert\.model)\.layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj))",
              .r = 16,
              .alpha = 16,
              .rank_pattern = {{R"(gemma_expert\..*)", 32}},
              .alpha_pattern = {{R"(gemma_expert\..*)", 32}},
              .full_training_modules =
                  variant == PiVariant::pi05
                      ? std::vector<std::string>{"vision_tower", "multi_modal_projector", "action_in_proj",
                                                 "action_out_proj", "time_mlp_in", "time_mlp_out"}
                      : std::vector<std::string>{"vision_tower", "multi_modal_projector", "action_in_proj",
                                                 "action_out_proj", "state_proj", "action_time_mlp_in",
                                                 "action_time_mlp_out"}},
      // LeRobot's geometry is 4 B parameters: planned from the config, never built to be counted.
      .plan_without_building = [variant](
                                   const nlohmann::json& config, const PolicyFeatures& features,
                                   const std::function<void(Policy&)>& adapt_probe) -> std::optional<PlannedPolicy> {
        auto parsed = Config::from_json(config, features);
        auto geometry = pi_geometry_of(parsed, variant);
        if (geometry.custom) return std::nullopt;
        return plan_pi_policy(variant, parsed, geometry, [&](const PiGeometry& small) {
          auto probe = std::make_shared<PolicyType>(parsed, small);
          if (adapt_probe) adapt_probe(*probe);
          return probe;
        });
      },
  };
}

}  // namespace lrhost::policy::pi
