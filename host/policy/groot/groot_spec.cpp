// GR00T N1.7's entry in the policy registry (policy_spec.hpp): make_groot_pre_post_processors'
// pipeline (LeRobot's GR00T steps between to_batch and device), the FSDP units — the Qwen3-VL vision
// blocks and text decoder layers and the diffusers blocks of vl_self_attention and the DiT — with the
// transformers / diffusers class names accelerate's configs use, lrhost's own settings beside
// config.json (groot_lrhost.json: a geometry or tokenizer other than LeRobot's), and groot.lua for
// lerobot-train.
#include <filesystem>
#include <functional>

#include "host/io/atomic_dir.hpp"
#include "host/policy/groot/groot_config.hpp"
#include "host/policy/groot/groot_plan.hpp"
#include "host/policy/groot/groot_policy.hpp"
#include "host/policy/policy_spec.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::groot {
namespace {

ProcessorPipeline groot_processor_pipeline() {
  using Kind = ProcessorStepKind;
  return {{{"rename_observations_processor", Kind::rename},
           {"to_batch_processor", Kind::to_batch},
           {"groot_n1_7_pack_inputs_v1", Kind::groot_pack},
           {"groot_n1_7_vlm_encode_v1", Kind::groot_vlm_encode},
           {"device_processor", Kind::device}},
          {{"groot_action_unpack_unnormalize_v2", Kind::groot_unpack}, {"device_processor", Kind::device}},
          {{{"groot_n1_7_action_decode_v1", Kind::groot_decode}, {"device_processor", Kind::device}}}};
}

// groot_lrhost.json (GrootPolicy::pretrained_extra_files) back into the folder's config.
void read_lrhost_settings(const std::filesystem::path& dir, nlohmann::ordered_json& config) {
  const auto file = dir / kGrootSettingsFile;
  if (!std::filesystem::exists(file)) return;
  const auto settings = io::read_json_file(file, "lrhost's GR00T settings");
  for (const char* key : {"geometry", "tokenizer_name"})
    if (settings.contains(key)) config[key] = settings[key];
}

// base_model_path's model.safetensors when the base resolves locally; a tiny geometry without a base
// trains from scratch.
std::optional<std::filesystem::path> base_weights_file(const nlohmann::json& config, const PolicyFeatures& features) {
  const auto geometry = resolve_geometry(GrootConfig::from_json(config, features));
  if (geometry.base_dir.empty()) return std::nullopt;
  const auto file = geometry.base_dir / "model.safetensors";
  if (!std::filesystem::exists(file))
    throw util::ConfigError("policy.base_model_path '" + geometry.base_dir.string() + "': " + file.string() +
                                " does not exist (GR00T's base weights)",
                            std::filesystem::exists(geometry.base_dir / "model.safetensors.index.json")
                                ? "sharded base checkpoints are not supported yet; save it as one model.safetensors"
                                : "download the base checkpoint (hf download <base_model_path>)");
  return file;
}

}  // namespace

const PolicySpec& spec() {
  static const PolicySpec entry{
      .type = "groot",
      .create = make_groot_policy,
      .default_config = [] { return GrootConfig{}.to_recipe_json(); },
      .weight_shape_fields = GrootConfig::weight_shape_fields(),
      .run_option_fields = config_field_names<GrootConfig>(&FieldTraits::lrhost_only),
      .processors = groot_processor_pipeline(),
      .fsdp_wrap_module_types = {"Qwen3VisionBlock", "Qwen3TextDecoderLayer", "BasicTransformerBlock"},
      .fsdp_lerobot_classes = {{"Qwen3VLVisionBlock", "Qwen3VisionBlock"},
                               {"Qwen3VLTextDecoderLayer", "Qwen3TextDecoderLayer"},
                               {"BasicTransformerBlock", "BasicTransformerBlock"}},
      .read_pretrained_extras = read_lrhost_settings,
      .base_weights = base_weights_file,
      .lerobot_train =
          LeRobotTrainMapping{.recipe = "groot.lua",
                              .deviating_fields = {"geometry", "tokenizer_name", "chunk_size", "n_action_steps",
                                                   "max_state_dim", "max_action_dim", "use_bf16", "max_steps"},
                              .optimizer_preset = "adamw",
                              .scheduler_preset = "diffuser"},
      // LeRobot's geometry is 3.1 B parameters: planned from config.json, never built to be counted.
      .plan_without_building =
          [](const nlohmann::json& config, const PolicyFeatures& features,
             const std::function<void(Policy&)>& adapt_probe) {
            return plan_groot_without_building(config, features, adapt_probe);
          },
  };
  return entry;
}

}  // namespace lrhost::policy::groot
