// Diffusion Policy's entry in the policy registry (policy_spec.hpp): LeRobot's default processor
// pipelines, the UNet's residual blocks as FSDP units, and diffusion_ddp.lua for lerobot-train.
#include "host/policy/diffusion/diffusion_config.hpp"
#include "host/policy/diffusion/diffusion_policy.hpp"
#include "host/policy/policy_spec.hpp"

namespace lrhost::policy::diffusion {

const PolicySpec& spec() {
  static const PolicySpec entry{
      .type = "diffusion",
      .create = make_diffusion_policy,
      .default_config = [] { return DiffusionConfig{}.to_json(); },
      .weight_shape_fields = DiffusionConfig::weight_shape_fields(),
      .processors = ProcessorPipeline::lerobot_default(),
      .fsdp_wrap_module_types = {"DiffusionConditionalResidualBlock1d"},
      .fsdp_lerobot_classes = {{"DiffusionConditionalResidualBlock1d", "DiffusionConditionalResidualBlock1d"}},
      // (the recipe's num_inference_steps = 100 is what LeRobot's null means)
      .lerobot_train =
          LeRobotTrainMapping{.recipe = "diffusion_ddp.lua",
                              .deviating_fields = {"horizon", "n_action_steps"},
                              .lerobot_values = {{"pretrained_backbone_weights", "ResNet18_Weights.IMAGENET1K_V1"}},
                              .optimizer_preset = "adam",
                              .scheduler_preset = "diffuser"},
  };
  return entry;
}

}  // namespace lrhost::policy::diffusion
