// A LoRA policy's pretrained folder as LeRobot 0.6.1 + PEFT 0.18 write and read it (reference
// peft.md §4): adapter_model.safetensors (the adapter weights and the modules trained in full, named
// "base_model.model." + the parameter's path, PEFT's get_peft_model_state_dict names) and
// adapter_config.json (PEFT's LoraConfig fields: base_model_name_or_path, r, lora_alpha,
// target_modules, modules_to_save, ...) beside config.json (use_peft: true) and the processors; no
// model.safetensors, since the base's weights are the base folder's.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/policy/peft/peft_settings.hpp"

namespace lrhost::policy {
class Policy;
struct LoraAdapters;
}  // namespace lrhost::policy

namespace lrhost::ckpt {

inline constexpr const char* kAdapterModelFile = "adapter_model.safetensors";
inline constexpr const char* kAdapterConfigFile = "adapter_config.json";
inline constexpr const char* kPeftKeyPrefix = "base_model.model.";

// Whether the adapter file holds the policy's tensor `name` (its own state-dict key): an adapter
// weight, or a parameter or buffer of a module trained in full.
bool in_adapter_file(const policy::LoraAdapters& adapters, const std::string& name);

// The adapter file's tensors of an adapted policy: its adapter parameters and the parameters and
// buffers of its full_training_modules, under PEFT's names.
std::vector<std::pair<std::string, torch::Tensor>> adapter_state(const policy::Policy& policy);
// The same, picked from a full state dict by the policy's names (an FSDP run's gathered state).
std::vector<std::pair<std::string, torch::Tensor>> adapter_state(
    const policy::Policy& policy, std::vector<std::pair<std::string, torch::Tensor>> state);

// The adapter file's tensors under the policy's own names, checked to be exactly the policy's adapter
// tensors (DataError naming the file and the missing or unexpected keys); shapes are the caller's
// to check (an FSDP run's parameters are shards).
std::vector<std::pair<std::string, torch::Tensor>> read_adapter_state(const policy::Policy& policy,
                                                                      const std::filesystem::path& file);
// Copies the adapter file's tensors into the policy's adapter (read_adapter_state's errors, or a
// shape that differs).
void load_adapter_state(policy::Policy& policy, const std::filesystem::path& file);

// adapter_config.json for the policy's adapters: PEFT 0.18's LoraConfig as it serialises itself.
nlohmann::ordered_json adapter_config_json(const policy::LoraAdapters& adapters);

// What a folder's adapter_config.json says: the adapters' settings and the base they adapt.
// NotImplemented naming the field for what lrhost's LoRA lacks (DoRA, lora_bias, bias other than
// "none", rank or alpha patterns, layers_to_transform, other peft types); DataError for a file that
// is no LoRA config.
struct AdapterConfig {
  policy::PeftSettings settings;
  std::string base_model_name_or_path;
  std::optional<std::string> revision;
};
AdapterConfig read_adapter_config(const std::filesystem::path& dir);

}  // namespace lrhost::ckpt
