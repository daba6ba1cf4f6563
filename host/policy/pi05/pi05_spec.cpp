// pi05's entry in the policy registry (policy_spec.hpp): config defaults (lrhost's geometry and
// tokenizer_name options included), weight-shape fields, make_pi05_pre_post_processors' pipeline, and
// the FSDP units: the Gemma decoder layers, gathered in (VLM, expert) pairs by the joint layer loop,
// and SigLIP's encoder layers (paligemma_with_expert.hpp); the plan without building at LeRobot's size;
// recipes/pi05.lua for lerobot-train (its tiny-model defaults reset to LeRobot's).
#include "host/policy/policy_spec.hpp"
#include "host/policy/pi05/pi05_config.hpp"
#include "host/policy/common/paligemma_with_expert.hpp"
#include "host/policy/common/pi_plan.hpp"
#include "host/policy/pi05/pi05_policy.hpp"

namespace lrhost::policy::pi05 {

const PolicySpec& spec() {
  static const PolicySpec entry{
      .type = "pi05",
      .create = [](const nlohmann::json& config, const PolicyFeatures& features) -> std::shared_ptr<Policy> {
        return std::make_shared<PI05Policy>(PI05Config::from_json(config, features));
      },
      .default_config = [] { return PI05Config{}.to_recipe_json(); },
      .weight_shape_fields = PI05Config::weight_shape_fields(),
      .run_option_fields = {"tokenizer_name"},
      .processors = pi05_processor_pipeline(),
      .fsdp_wrap_module_types = {"GemmaDecoderLayer", "SiglipEncoderLayer"},
      .fsdp_gather_group = pi_common::layer_pair_of,
      .lerobot_train = LeRobotTrainMapping{.recipe = "pi05.lua",
                                           .deviating_fields = {"geometry", "tokenizer_name", "image_resolution",
                                                                "chunk_size", "n_action_steps", "tokenizer_max_length",
                                                                "scheduler_warmup_steps"},
                                           .optimizer_preset = "adamw",
                                           .scheduler_preset = "cosine_decay_with_warmup"},
      // LeRobot's geometry is 4 B parameters: planned from the config, never built to be counted.
      .plan_without_building = [](const nlohmann::json& config,
                                  const PolicyFeatures& features) -> std::optional<PlannedPolicy> {
        auto parsed = PI05Config::from_json(config, features);
        auto geometry = pi_common::pi_geometry_of(parsed, pi_common::PiVariant::pi05);
        if (geometry.custom) return std::nullopt;
        return pi_common::plan_pi_policy(pi_common::PiVariant::pi05, parsed, geometry,
                                         [&](const pi_common::PiGeometry& small) {
                                           return std::make_shared<PI05Policy>(parsed, small);
                                         });
      },
  };
  return entry;
}

}  // namespace lrhost::policy::pi05
