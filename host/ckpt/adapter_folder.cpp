// A LoRA policy's pretrained folder, PEFT's files; see adapter_folder.hpp.
#include "host/ckpt/adapter_folder.hpp"

#include <map>
#include <set>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/peft/lora_adapters.hpp"
#include "host/policy/policy.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::ckpt {
namespace {

namespace fs = std::filesystem;

const policy::LoraAdapters& adapters_of(const policy::Policy& policy) {
  const auto* adapters = policy.lora_adapters();
  if (!adapters) throw util::ConfigError("the '" + policy.type() + "' policy has no LoRA adapters");
  return *adapters;
}

// The policy's tensors the adapter file holds, by the policy's own names.
std::vector<std::pair<std::string, torch::Tensor>> adapter_tensors(const policy::Policy& policy) {
  const auto& adapters = adapters_of(policy);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : policy.named_parameters())
    if (in_adapter_file(adapters, item.key())) tensors.emplace_back(item.key(), item.value());
  for (const auto& item : policy.named_buffers())
    if (in_adapter_file(adapters, item.key())) tensors.emplace_back(item.key(), item.value());
  return tensors;
}

}  // namespace

bool in_adapter_file(const policy::LoraAdapters& adapters, const std::string& name) {
  for (const auto& module : adapters.selection.adapted)
    if (name == module + ".lora_A.weight" || name == module + ".lora_B.weight") return true;
  for (const auto& module : adapters.selection.trained_fully)
    if (name.rfind(module + ".", 0) == 0) return true;
  return false;
}

std::vector<std::pair<std::string, torch::Tensor>> adapter_state(const policy::Policy& policy) {
  return adapter_state(policy, adapter_tensors(policy));
}

std::vector<std::pair<std::string, torch::Tensor>> adapter_state(
    const policy::Policy& policy, std::vector<std::pair<std::string, torch::Tensor>> state) {
  const auto& adapters = adapters_of(policy);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (auto& [name, tensor] : state)
    if (in_adapter_file(adapters, name)) tensors.emplace_back(kPeftKeyPrefix + name, tensor.detach());
  return tensors;
}

std::vector<std::pair<std::string, torch::Tensor>> read_adapter_state(const policy::Policy& policy,
                                                                      const fs::path& file) {
  auto content = io::read_safetensors(file, io::MapMode::read_only);
  std::set<std::string> wanted, in_file;
  for (const auto& [name, tensor] : adapter_tensors(policy)) wanted.insert(kPeftKeyPrefix + name);
  std::vector<std::string> missing, unexpected;
  for (const auto& [name, tensor] : content.tensors) {
    in_file.insert(name);
    if (!wanted.count(name)) unexpected.push_back(name);
  }
  for (const auto& name : wanted)
    if (!in_file.count(name)) missing.push_back(name);
  if (!missing.empty() || !unexpected.empty())
    throw util::DataError(file.string() + " does not hold this policy's LoRA adapters:" +
                              (missing.empty() ? "" : " missing " + util::quoted_list(missing) + ";") +
                              (unexpected.empty() ? "" : " unexpected " + util::quoted_list(unexpected) + ";"),
                          "the adapters were saved with other targets, another rank or another base policy");
  const std::size_t prefix = std::string(kPeftKeyPrefix).size();
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (auto& [name, tensor] : content.tensors) state.emplace_back(name.substr(prefix), std::move(tensor));
  return state;
}

void load_adapter_state(policy::Policy& policy, const fs::path& file) {
  auto state = read_adapter_state(policy, file);
  const auto tensors = adapter_tensors(policy);
  std::map<std::string, torch::Tensor> targets(tensors.begin(), tensors.end());
  torch::NoGradGuard no_grad;
  for (const auto& [name, saved] : state) {
    auto& target = targets.at(name);
    if (saved.sizes() != target.sizes())
      throw util::DataError(file.string() + ": '" + kPeftKeyPrefix + name + "' is " + c10::str(saved.sizes()) +
                            ", the adapter has " + c10::str(target.sizes()));
    target.copy_(saved);
  }
}

nlohmann::ordered_json adapter_config_json(const policy::LoraAdapters& adapters) {
  const auto& s = adapters.settings;
  // LeRobot's default targets carry modules_to_save = [] (and the command line's list replaces it); a
  // type LeRobot has no defaults for leaves PEFT's None.
  const auto* spec = policy::find_policy_spec(adapters.policy_type);
  const auto* lerobot = spec && spec->lerobot_peft ? &*spec->lerobot_peft : nullptr;
  nlohmann::ordered_json modules_to_save = nullptr;
  if (!s.full_training_modules.empty() || lerobot) modules_to_save = s.full_training_modules;
  nlohmann::ordered_json rank_pattern = nlohmann::ordered_json::object(),
                         alpha_pattern = nlohmann::ordered_json::object();
  for (const auto& [key, r] : s.rank_pattern) rank_pattern[key] = r;
  for (const auto& [key, alpha] : s.alpha_pattern) alpha_pattern[key] = alpha;
  nlohmann::ordered_json auto_mapping = nullptr;
  if (lerobot)
    auto_mapping = {{"base_model_class", lerobot->base_model_class}, {"parent_library", lerobot->parent_library}};
  // PEFT 0.18.0's LoraConfig.to_dict() in its field order, as PeftModel.save_pretrained writes it
  // (inference_mode true on save).
  return {{"task_type", nullptr},
          {"peft_type", "LORA"},
          {"auto_mapping", auto_mapping},
          {"peft_version", "0.18.0"},
          {"base_model_name_or_path", adapters.base_model_name_or_path},
          {"revision", nullptr},
          {"inference_mode", true},
          {"r", s.lora.r},
          {"target_modules", adapters.targets.to_json()},
          {"exclude_modules", nullptr},
          {"lora_alpha", s.lora.alpha},
          {"lora_dropout", s.lora.dropout},
          {"fan_in_fan_out", false},
          {"bias", "none"},
          {"use_rslora", s.lora.use_rslora},
          {"modules_to_save", modules_to_save},
          {"init_lora_weights", policy::init_lora_weights_json(s.lora.init)},
          {"layers_to_transform", nullptr},
          {"layers_pattern", nullptr},
          {"rank_pattern", rank_pattern},
          {"alpha_pattern", alpha_pattern},
          {"megatron_config", nullptr},
          {"megatron_core", "megatron.core"},
          {"trainable_token_indices", nullptr},
          {"loftq_config", nlohmann::ordered_json::object()},
          {"eva_config", nullptr},
          {"corda_config", nullptr},
          {"use_dora", false},
          {"alora_invocation_tokens", nullptr},
          {"use_qalora", false},
          {"qalora_group_size", 16},
          {"layer_replication", nullptr},
          {"lora_bias", false},
          {"target_parameters", nullptr},
          {"arrow_config", nullptr},
          {"ensure_weight_tying", false}};
}

AdapterConfig read_adapter_config(const fs::path& dir) {
  const auto file = dir / kAdapterConfigFile;
  const nlohmann::ordered_json json =  // ordered: a pattern's first match wins, in the file's order
      io::read_json_file(file, "an adapter folder holds adapter_config.json beside config.json");
  const std::string where = file.string();
  if (!json.is_object() || json.value("peft_type", std::string()) != "LORA") {
    const auto type = json.is_object() && json.contains("peft_type") ? json["peft_type"].dump() : std::string("none");
    if (json.is_object() && json.contains("peft_type"))
      throw util::NotImplemented(where + ": peft_type " + type + " adapters are not implemented in lrhost (LORA is)");
    throw util::DataError(where + " is not a PEFT adapter config (no peft_type)");
  }
  auto unsupported = [&](const char* key, const nlohmann::json& plain) {
    if (json.contains(key) && !json[key].is_null() && json[key] != plain)
      throw util::NotImplemented(where + ": " + key + " = " + json[key].dump() + " is not implemented in lrhost's LoRA",
                                 std::string("lrhost loads adapters with ") + key + " = " + plain.dump());
  };
  unsupported("use_dora", false);
  unsupported("lora_bias", false);
  unsupported("bias", "none");
  unsupported("fan_in_fan_out", false);
  unsupported("use_qalora", false);
  for (const char* key : {"layers_to_transform", "layers_pattern", "exclude_modules", "layer_replication",
                          "target_parameters", "trainable_token_indices", "alora_invocation_tokens"})
    if (json.contains(key) && !json[key].is_null())
      throw util::NotImplemented(where + ": " + key + " = " + json[key].dump() +
                                 " is not implemented in lrhost's LoRA");

  AdapterConfig config;
  auto& s = config.settings;
  auto number = [&](const char* key, double fallback) {
    if (!json.contains(key) || json[key].is_null()) return fallback;
    if (!json[key].is_number())
      throw util::DataError(where + ": " + key + " must be a number, got " + json[key].dump());
    return json[key].get<double>();
  };
  s.lora.r = static_cast<int64_t>(number("r", 8));
  s.lora.alpha = number("lora_alpha", 8);
  s.lora.dropout = number("lora_dropout", 0);
  s.lora.use_rslora = json.value("use_rslora", false);
  const auto& init = json.contains("init_lora_weights") ? json["init_lora_weights"] : nlohmann::ordered_json(true);
  s.lora.init = init.is_boolean()    ? (init.get<bool>() ? nn::LoraInit::kaiming_uniform : nn::LoraInit::none)
                : init == "gaussian" ? nn::LoraInit::gaussian
                                     : nn::LoraInit::kaiming_uniform;  // the weights come from the file anyway
  if (!json.contains("target_modules") || json["target_modules"].is_null())
    throw util::DataError(where + " names no target_modules");
  s.targets = nn::LoraTargets::from_json(json["target_modules"], where + ": target_modules");
  for (const char* key : {"rank_pattern", "alpha_pattern"}) {
    if (!json.contains(key) || json[key].is_null()) continue;
    if (!json[key].is_object())
      throw util::DataError(where + ": " + key + " must be an object {module pattern: number}, got " +
                            json[key].dump());
    for (const auto& [pattern, value] : json[key].items()) {
      if (!value.is_number())
        throw util::DataError(where + ": " + key + "['" + pattern + "'] must be a number, got " + value.dump());
      if (std::string(key) == "rank_pattern")
        s.rank_pattern.emplace_back(pattern, value.get<int64_t>());
      else
        s.alpha_pattern.emplace_back(pattern, value.get<double>());
    }
  }
  if (json.contains("modules_to_save") && json["modules_to_save"].is_array())
    for (const auto& name : json["modules_to_save"]) s.full_training_modules.push_back(name.get<std::string>());
  if (json.contains("base_model_name_or_path") && json["base_model_name_or_path"].is_string())
    config.base_model_name_or_path = json["base_model_name_or_path"].get<std::string>();
  if (json.contains("revision") && json["revision"].is_string()) config.revision = json["revision"].get<std::string>();
  return config;
}

}  // namespace lrhost::ckpt
