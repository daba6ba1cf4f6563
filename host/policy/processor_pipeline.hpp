// The shape of a policy's processor pipelines: the ordered steps of its preprocessor and
// postprocessor, by LeRobot's registry names, as each policy's processor_<name>.py builds them
// (make_default_pre_post_processors for ACT/Diffusion, make_smolvla_pre_post_processors, ...). A
// policy's spec (policy_spec.hpp) holds its pipeline; PolicyProcessors writes and reads the JSON files
// step by step from it, so a new step order is data in the policy's folder, not a branch here.
// Every registry name maps to one kind of step lrhost knows how to run, write and read.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace lrhost::policy {

enum class ProcessorStepKind {
  rename,         // rename_observations_processor {rename_map}
  to_batch,       // to_batch_processor {} (batches are already batched)
  device,         // device_processor {device, float_dtype}
  normalizer,     // normalizer_processor {eps, features, norm_map} + state file
  unnormalizer,   // unnormalizer_processor, the same in the postprocessor
  task_new_line,  // <policy>_new_line_processor {}: "\n" appended to the task unless it ends with one
  tokenizer,      // tokenizer_processor {max_length, task_key, padding_side, padding, truncation, tokenizer_name}
  // relative_actions_processor {enabled, exclude_joints, action_names}: only enabled = false (a no-op)
  relative_actions,
  absolute_actions,  // absolute_actions_processor {enabled}: only enabled = false (a no-op)
  // pi05_prepare_state_tokenizer_processor_step {}: the task becomes pi05's prompt with the normalized,
  // discretized state (state_prompt.hpp)
  state_prompt,
  // GR00T N1.7's own steps (policy/groot/groot_processor_steps.hpp): groot_n1_7_pack_inputs_v1 (min/max
  // normalization to [-1, 1], padding, masks, embodiment id) + state file, groot_n1_7_vlm_encode_v1
  // (images and the chat prompt), groot_action_unpack_unnormalize_v2 + state file, or
  // groot_n1_7_action_decode_v1 (a checkpoint's own statistics, inline in its config; no state file).
  groot_pack,
  groot_vlm_encode,
  groot_unpack,
  groot_decode,
};

struct ProcessorStep {
  std::string registry_name;
  ProcessorStepKind kind;
};

struct ProcessorPipeline {
  std::vector<ProcessorStep> pre, post;
  // Other postprocessors the same preprocessor pairs with (GR00T: the decode with a base checkpoint's
  // own statistics); a file's step names pick one when it is read.
  std::vector<std::vector<ProcessorStep>> other_posts;

  // LeRobot's make_default_pre_post_processors (ACT, Diffusion): rename -> to_batch -> device ->
  // normalizer; unnormalizer -> device.
  static ProcessorPipeline lerobot_default();
  // A pipeline fed with language: the default with `new_line_step` (registry name) and the tokenizer
  // after to_batch, as make_smolvla_pre_post_processors orders them.
  static ProcessorPipeline with_language(const std::string& new_line_step);

  // The index of the first step of `kind` in `steps`; nullopt when it has none.
  static std::optional<std::size_t> index_of(const std::vector<ProcessorStep>& steps, ProcessorStepKind kind);
  bool has_language() const {
    return index_of(pre, ProcessorStepKind::tokenizer) || index_of(pre, ProcessorStepKind::groot_vlm_encode);
  }
  // The steps that hold the stats (their state files): the (un)normalizer, or GR00T's pack / unpack.
  static std::optional<std::size_t> stats_step(const std::vector<ProcessorStep>& steps);
  // The registry names in order, comma-separated (for messages).
  static std::string names(const std::vector<ProcessorStep>& steps);
  // Whether `registry_names` are exactly these steps' names in order.
  static bool matches(const std::vector<ProcessorStep>& steps, const std::vector<std::string>& registry_names);

  bool operator==(const ProcessorPipeline& other) const;
};

// The state file of step `index` of a pipeline named `pipeline_name` ("policy_preprocessor"):
// "<pipeline_name>_step_<index>_<registry_name>.safetensors", as LeRobot's pipeline.py names them.
std::string step_state_file(const std::string& pipeline_name, std::size_t index, const std::string& registry_name);

}  // namespace lrhost::policy
