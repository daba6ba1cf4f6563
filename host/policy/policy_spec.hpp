// Everything lrhost knows about one policy type, in one record that lives in the type's own folder
// (host/policy/<type>/<type>_spec.cpp), as torchtitan keeps a train spec per model: its name, how to
// build it, its default config, its processor pipelines, its FSDP wrap units and how lerobot-train's
// command line maps onto it. The registry (registry.hpp) lists the specs; defaults, processors,
// pretrained overrides, FSDP and the lerobot-train mapping read them instead of naming types.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/policy/planned_policy.hpp"
#include "host/policy/policy.hpp"
#include "host/policy/processor_pipeline.hpp"

namespace lrhost::policy {

using PolicyFactory = std::function<std::shared_ptr<Policy>(const nlohmann::json& config, const PolicyFeatures&)>;

// A type's LoRA as LeRobot 0.6.1 + PEFT 0.18 have it.
struct LeRobotPeft {
  // _get_default_peft_targets(): the target regex when policy.peft names none (its modules_to_save
  // is an empty list).
  std::string default_targets;
  // adapter_config.json's auto_mapping, which PEFT writes for a base that is no transformers model:
  // the LeRobot policy class and its module.
  std::string base_model_class;
  std::string parent_library;
};

// openpi's LoRA recipe for a type (policy.peft.preset = "openpi"), in PEFT's terms: the target regex,
// the rank and alpha, PEFT's rank_pattern / alpha_pattern (the first key matching a module's name end
// wins) and the modules trained in full.
struct OpenpiLora {
  std::string targets;
  int64_t r = 16;
  double alpha = 16;
  std::vector<std::pair<std::string, int64_t>> rank_pattern;
  std::vector<std::pair<std::string, double>> alpha_pattern;
  std::vector<std::string> full_training_modules;
};

// How `lerobot-train --policy.type=<type> ...` maps onto lrhost (host/cli/lerobot_train.cpp).
struct LeRobotTrainMapping {
  std::string recipe;                         // the shipped recipe under recipes/, e.g. "act_ddp.lua"
  std::vector<std::string> deviating_fields;  // policy fields whose recipe default differs from LeRobot's
  // Policy fields lrhost's config leaves null where lerobot-train has a value, with that value as a
  // command line types it (ACT's pretrained_backbone_weights: torchvision's ImageNet weights, read
  // from the torch hub cache; the shipped recipes hold "" so that they run offline out of the box).
  std::vector<std::pair<std::string, std::string>> lerobot_values;
  std::string optimizer_preset;  // LeRobot's get_optimizer_preset() type: "adamw", "adam"
  std::string scheduler_preset;  // get_scheduler_preset() type; "" for none
};

struct PolicySpec {
  std::string type;  // config.json's "type"
  PolicyFactory create;
  // Every field with its default (null fields kept) in config.json's order, plus lrhost's own
  // options a recipe may set, before features are known (lr.policy.defaults).
  std::function<nlohmann::ordered_json()> default_config;
  // Fields that shape the weights: fixed when fine-tuning from a pretrained folder.
  std::vector<std::string> weight_shape_fields;
  // lrhost's own options (not in LeRobot's config.json): a fine-tuning run takes them from the recipe.
  std::vector<std::string> run_option_fields;
  ProcessorPipeline processors = ProcessorPipeline::lerobot_default();
  // Module type names (LeRobot's class names) whose instances are FSDP wrap units.
  std::vector<std::string> fsdp_wrap_module_types;
  // LeRobot's module class names that accelerate's fsdp_transformer_layer_cls_to_wrap may name, each
  // with the unit type above that lrhost wraps for it (host/cli/accelerate_config.cpp).
  std::vector<std::pair<std::string, std::string>> fsdp_lerobot_classes;
  // Units that run gathered at the same time (pi0/pi05: VLM layer i with expert layer i): the group a
  // unit's module path belongs to; unset, each unit alone. The plan's peak of gathered parameters
  // counts a group's units together.
  std::function<std::string(const std::string& unit_path)> fsdp_gather_group;
  // The reading twin of Policy::pretrained_extra_files: names in a pretrained folder's config what
  // the type's files beside config.json hold (pi0/pi05: `geometry` = the folder's geometry.json).
  // Unset: config.json is the whole config.
  std::function<void(const std::filesystem::path& dir, nlohmann::ordered_json& config)> read_pretrained_extras;
  // Why a folder's config did not build when one of those files is missing (pi0/pi05 without
  // geometry.json is built at LeRobot's full size): {what is missing, how to fix it}, or nullopt.
  std::function<std::optional<std::pair<std::string, std::string>>(const std::filesystem::path& dir,
                                                                   const nlohmann::json& config)>
      missing_pretrained_extras;
  // The weights file a new policy of this config starts from, when the type has one beside its own
  // folder (GR00T: base_model_path's model.safetensors, which LeRobot's GrootPolicy loads at
  // construction): lr.policy.new then builds the policy block by block and points its parameters at
  // the memory-mapped file (ckpt::build_with_base_weights), so no rank holds the whole model to load it.
  // Unset, or nullopt: the policy is built with its initial weights and load_pretrained_parts().
  std::function<std::optional<std::filesystem::path>(const nlohmann::json& config, const PolicyFeatures& features)>
      base_weights;
  // Unset for lrhost-only types that lerobot-train does not know.
  std::optional<LeRobotTrainMapping> lerobot_train;
  // What LeRobot + PEFT know of the type's LoRA (unset: LeRobot has no default targets for the type,
  // so targets must be given, and adapter_config.json has no auto_mapping).
  std::optional<LeRobotPeft> lerobot_peft;
  // openpi's LoRA recipe (unset: the type has none).
  std::optional<OpenpiLora> openpi_lora;
  // Policies too large to build only to plan them (pi0/pi05 at full size): the plan's description of
  // the policy from its config alone (planned_policy.hpp); nullopt, or unset, builds the policy.
  // `adapt_probe` (may be empty) is applied to every small policy built to measure activations, so the
  // figure is that of the run's policy (LoRA adapters attached: lrhost show).
  std::function<std::optional<PlannedPolicy>(const nlohmann::json& config, const PolicyFeatures& features,
                                             const std::function<void(Policy&)>& adapt_probe)>
      plan_without_building;
};

}  // namespace lrhost::policy
