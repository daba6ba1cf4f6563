// LeRobot's pretrained policy folder (PreTrainedPolicy.save_pretrained / from_pretrained):
// config.json (the policy config, "type" first, indent 4), model.safetensors (the full state dict in
// one file with {"format": "pt"} metadata) and, when the policy has them, the processor files of
// host/policy/processors.hpp. Loading rebuilds the policy from config.json through the registry and
// copies the weights after checking them strictly: LeRobot's own loader only logs missing or
// unexpected keys (a misnamed key silently keeps random weights); here they are errors naming the
// keys unless the caller asks for strict = false, and shapes and dtypes must always match.
// A policy with LoRA adapters saves PEFT's adapter folder instead (adapter_folder.hpp), and loading
// such a folder builds its base and attaches the adapters.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/policy/policy.hpp"
#include "host/policy/pretrained_folder.hpp"

namespace lrhost::ckpt {

using policy::kConfigFile;
using policy::kModelFile;

// Writes config.json, model.safetensors and the processors (when set) into `dir` (created when
// missing). Each file is written atomically; checkpoints make the whole folder atomic. For a policy
// sharded by FSDP every rank must call it (the full state dict is gathered); rank 0 writes.
void save_pretrained(const policy::Policy& policy, const std::filesystem::path& dir);
// The same with the state dict given (FSDP: gathered once, before rank 0 writes).
void save_pretrained(const policy::Policy& policy, const std::filesystem::path& dir,
                     std::vector<std::pair<std::string, torch::Tensor>> state);
// The two halves of save_pretrained, for a checkpoint that writes model.safetensors later (an
// asynchronous save, host/ckpt/checkpoint_manager.hpp): the state dict in the order
// model.safetensors stores it, and every other file of the folder (processors, config.json).
void sort_pretrained_state(std::vector<std::pair<std::string, torch::Tensor>>& state);
void save_pretrained_files(const policy::Policy& policy, const std::filesystem::path& dir);
// The weights file of the policy's folder: model.safetensors, or an adapted policy's
// adapter_model.safetensors (whose tensors are ckpt::adapter_state's).
std::string pretrained_weights_file(const policy::Policy& policy);
// Whether the folder's config.json says use_peft: LoRA adapters on a base named by its
// adapter_config.json.
bool is_adapter_folder(const std::filesystem::path& dir);

struct LoadReport {
  std::vector<std::string> missing;     // in the policy, not in the file (kept at their init values)
  std::vector<std::string> unexpected;  // in the file, not in the policy (ignored)
};

// Copies model.safetensors into `policy`'s parameters and buffers. Missing or unexpected keys are a
// DataError listing them when `strict`, otherwise reported back (and logged as a warning); a shape
// or dtype mismatch is always a DataError naming the key, both shapes/dtypes and the file.
LoadReport load_state_dict(policy::Policy& policy, const std::filesystem::path& model_file, bool strict = true);

// The policy config.json describes, with its initial weights (nothing read from model.safetensors);
// ConfigError naming config.json when it does not build. `changes` (a recipe's policy table made by
// policy::pretrained_policy_table) go on top of config.json: fine-tuning with other settings.
// What build_from_config builds from: config.json with `changes` on top (features taken out, as
// create_policy wants them; the type's extra files named), not yet validated by the policy type.
struct PretrainedBuildInputs {
  nlohmann::json config;
  policy::PolicyFeatures features;
};
// The features of the dataset a pretrained policy is fine-tuned on, asked for only when config.json
// leaves input_features or output_features empty (LeRobot's own PI05Config() writes {}): that side
// is then the dataset's, as LeRobot's make_policy fills it. Unset: an empty side stays empty (and the
// policy type says what it misses).
using DatasetFeatures = std::function<policy::PolicyFeatures()>;
PretrainedBuildInputs build_inputs(const std::filesystem::path& dir,
                                   const nlohmann::json& changes = nlohmann::json::object(),
                                   const DatasetFeatures& dataset = {});
std::shared_ptr<policy::Policy> build_from_config(const std::filesystem::path& dir,
                                                  const nlohmann::json& changes = nlohmann::json::object(),
                                                  const DatasetFeatures& dataset = {});

// How load_pretrained gives the policy its weights.
enum class WeightLoading {
  copy,         // built with its initial weights, then the file's values copied in
  file_backed,  // built block by block without weights (nn/deferred_init.hpp), the parameters then
                // pointing at the memory-mapped file's copy-on-write pages: no rank ever holds the
                // whole model for loading; FSDP copies out its own rows (LeRobot #4009)
};

// A new policy of `config` whose weights come from `weights_file` (its type's base checkpoint,
// PolicySpec::base_weights): built block by block onto released parameters (nn/deferred_init.hpp),
// then pointed at the memory-mapped file's copy-on-write pages after the strict key, shape and dtype
// check (the file's names through Policy::adapt_pretrained_tensors), as file-backed loading does.
std::shared_ptr<policy::Policy> build_with_base_weights(const nlohmann::json& config,
                                                        const policy::PolicyFeatures& features,
                                                        const std::filesystem::path& weights_file);

// Builds the policy from config.json, loads its weights and its processors (when the folder has
// processor files). The policy is left in eval mode, as LeRobot's from_pretrained does. `dir` may be
// a hub id ("lerobot/smolvla_base") present in the local Hugging Face cache (io/hf_cache.hpp).
// `changes` with an active "peft" table (policy/peft/peft_settings.hpp) then attach LoRA adapters,
// as lerobot-train --peft.* does. An adapter folder (is_adapter_folder) loads its base with the
// folder's config, then its adapters and processors, as LeRobot's make_policy does for use_peft.
std::shared_ptr<policy::Policy> load_pretrained(const std::filesystem::path& dir, bool strict = true,
                                                const nlohmann::json& changes = nlohmann::json::object(),
                                                WeightLoading loading = WeightLoading::copy,
                                                const DatasetFeatures& dataset = {});

}  // namespace lrhost::ckpt
