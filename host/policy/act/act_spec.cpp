// ACT's entry in the policy registry (policy_spec.hpp): LeRobot's default processor pipelines, the
// encoder and decoder layers as FSDP units, and act_ddp.lua for `lerobot-train --policy.type=act`.
#include "host/policy/act/act_config.hpp"
#include "host/policy/act/act_policy.hpp"
#include "host/policy/policy_spec.hpp"

namespace lrhost::policy::act {

const PolicySpec& spec() {
  static const PolicySpec entry{
      .type = "act",
      .create = make_act_policy,
      .default_config = [] { return ACTConfig{}.to_json(); },
      .weight_shape_fields = ACTConfig::weight_shape_fields(),
      .processors = ProcessorPipeline::lerobot_default(),
      .fsdp_wrap_module_types = {"ACTEncoderLayer", "ACTDecoderLayer"},
      .fsdp_lerobot_classes = {{"ACTEncoderLayer", "ACTEncoderLayer"}, {"ACTDecoderLayer", "ACTDecoderLayer"}},
      .lerobot_train =
          LeRobotTrainMapping{.recipe = "act_ddp.lua",
                              .deviating_fields = {"chunk_size", "n_action_steps"},
                              .lerobot_values = {{"pretrained_backbone_weights", "ResNet18_Weights.IMAGENET1K_V1"}},
                              .optimizer_preset = "adamw",
                              .scheduler_preset = ""},
  };
  return entry;
}

}  // namespace lrhost::policy::act
