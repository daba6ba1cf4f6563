// SmolVLA's entry in the policy registry (policy_spec.hpp): make_smolvla_pre_post_processors'
// pipeline (new-line and tokenizer steps after to_batch), the decoder layers and the vision tower as
// FSDP units (the layer loop runs each layer index inside both layers' hooks, although SmolVLA calls
// their parts directly), and smolvla.lua for lerobot-train.
#include "host/policy/policy_spec.hpp"
#include "host/policy/smolvla/smolvla_config.hpp"
#include "host/policy/smolvla/smolvla_policy.hpp"

namespace lrhost::policy::smolvla {

const PolicySpec& spec() {
  static const PolicySpec entry{
      .type = "smolvla",
      .create = make_smolvla_policy,
      .default_config = [] { return SmolVLAConfig{}.to_recipe_json(); },
      .weight_shape_fields = SmolVLAConfig::weight_shape_fields(),
      .run_option_fields = config_field_names<SmolVLAConfig>(&FieldTraits::lrhost_only),
      .processors = ProcessorPipeline::with_language("smolvla_new_line_processor"),
      .fsdp_wrap_module_types = {"LlamaDecoderLayer", "SiglipVisionTransformer"},
      // transformers' classes in LeRobot's SmolVLM + expert; lrhost wraps the whole vision tower.
      .fsdp_lerobot_classes = {{"LlamaDecoderLayer", "LlamaDecoderLayer"},
                               {"SmolVLMVisionTransformer", "SiglipVisionTransformer"}},
      .lerobot_train = LeRobotTrainMapping{.recipe = "smolvla.lua",
                                           .deviating_fields = {"vlm_model_name", "resize_imgs_with_padding",
                                                                "chunk_size", "n_action_steps", "num_vlm_layers",
                                                                "tokenizer_max_length", "scheduler_warmup_steps"},
                                           .optimizer_preset = "adamw",
                                           .scheduler_preset = "cosine_decay_with_warmup"},
      // modeling_smolvla.py's _get_default_peft_targets: the expert's q/v and the projections.
      .lerobot_peft =
          LeRobotPeft{
              .default_targets =
                  R"((model\.vlm_with_expert\.lm_expert\..*\.(q|v)_proj|model\.(state_proj|action_in_proj|action_out_proj|action_time_mlp_in|action_time_mlp_out)))",
              .base_model_class = "SmolVLAPolicy",
              .parent_library = "lerobot.policies.smolvla.modeling_smolvla"},
  };
  return entry;
}

}  // namespace lrhost::policy::smolvla
