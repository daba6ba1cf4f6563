// save_pretrained / load_pretrained of LeRobot's pretrained policy folder; see pretrained_dir.hpp.
#include "host/ckpt/pretrained_dir.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <mutex>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "host/ckpt/adapter_folder.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/policy/peft/lora_adapters.hpp"
#include "host/policy/policy_defaults.hpp"
#include "host/policy/pretrained_overrides.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "host/util/log.hpp"
#include "host/util/strings.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::ckpt {
namespace fs = std::filesystem;

namespace {

std::string joined(const std::vector<std::string>& names, std::size_t limit = 20) {
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < limit; ++i) text += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > limit) text += ", ... (" + std::to_string(names.size()) + " in all)";
  return text;
}

std::string shape_text(c10::IntArrayRef sizes) {
  return c10::str(sizes);
}

}  // namespace

void save_pretrained(const policy::Policy& policy, const fs::path& dir) {
  if (policy.lora_adapters()) {  // the adapters alone: the base's weights are its own folder's
    save_pretrained(policy, dir, adapter_state(policy));
    return;
  }
  auto state = policy.state_dict();
  // An FSDP-sharded policy gathers its state dict on every rank (all must call this); one writes.
  if (policy.is_sharded() && util::rank_from_environment() != 0) return;
  save_pretrained(policy, dir, std::move(state));
}

std::string pretrained_weights_file(const policy::Policy& policy) {
  return policy.lora_adapters() ? kAdapterModelFile : kModelFile;
}

void sort_pretrained_state(std::vector<std::pair<std::string, torch::Tensor>>& entries) {
  // safetensors' own writer orders tensors by dtype (widest first), then by name; do the same so the
  // file matches what huggingface_hub would write for the same state dict.
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    auto sa = a.second.element_size(), sb = b.second.element_size();
    return sa != sb ? sa > sb : a.first < b.first;
  });
}

void save_pretrained_files(const policy::Policy& policy, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw util::IoError("cannot create " + dir.string() + ": " + ec.message());
  if (policy.processors()) policy.processors()->save(dir);
  for (const auto& [name, content] : policy.pretrained_extra_files()) io::write_file_atomic(dir / name, content);
  auto config = policy.config();
  if (const auto* adapters = policy.lora_adapters()) {
    config["use_peft"] = true;  // as LeRobot's wrap_with_peft marks it
    io::write_file_atomic(dir / kAdapterConfigFile, adapter_config_json(*adapters).dump(2));
  }
  io::write_file_atomic(dir / kConfigFile, config.dump(4));
}

void save_pretrained(const policy::Policy& policy, const fs::path& dir,
                     std::vector<std::pair<std::string, torch::Tensor>> entries) {
  save_pretrained_files(policy, dir);
  if (!policy.lora_adapters()) policy.adapt_saved_tensors(entries);
  sort_pretrained_state(entries);
  io::write_safetensors(dir / pretrained_weights_file(policy), entries, {{"format", "pt"}});
}

namespace {

// Copies (or, for a parameter still on the meta device from a deferred build, points at) the file's
// tensors after checking keys, shapes and dtypes.
LoadReport load_tensors(policy::Policy& policy, const fs::path& model_file, bool strict, io::MapMode mode) {
  auto content = io::read_safetensors(model_file, mode);
  for (const auto& note : policy.adapt_pretrained_tensors(content.tensors))
    spdlog::warn("{}: {}", model_file.string(), note);
  std::map<std::string, torch::Tensor> targets;
  for (auto& [name, tensor] : policy.state_dict()) targets.emplace(name, tensor);
  std::set<std::string> in_file;
  LoadReport report;
  for (const auto& [name, tensor] : content.tensors) {
    in_file.insert(name);
    if (!targets.count(name)) report.unexpected.push_back(name);
  }
  for (const auto& [name, tensor] : targets)
    if (!in_file.count(name)) report.missing.push_back(name);
  if (!report.missing.empty() || !report.unexpected.empty()) {
    std::string message = model_file.string() + " does not match the '" + policy.type() + "' policy's state dict:";
    if (!report.missing.empty()) message += " missing keys " + joined(report.missing) + ";";
    if (!report.unexpected.empty()) message += " unexpected keys " + joined(report.unexpected) + ";";
    message.pop_back();
    if (strict)
      throw util::DataError(message,
                            "the checkpoint was saved by a different policy or config; load with "
                            "strict = false to keep the matching keys only");
    spdlog::warn("{} (strict = false: missing keys keep their initial values, unexpected keys are ignored)", message);
  }
  // Every shape and dtype is checked before anything is copied, so a failed load changes nothing.
  // A floating tensor of another floating dtype is cast to the policy's, as LeRobot's from_pretrained
  // (load_state_dict into a model built in config.dtype) does: fine-tuning a float32 folder with
  // policy.dtype = bfloat16, or back.
  std::set<std::pair<c10::ScalarType, c10::ScalarType>> casts;
  for (const auto& [name, tensor] : content.tensors) {
    auto target = targets.find(name);
    if (target == targets.end()) continue;
    if (target->second.sizes() != tensor.sizes())
      throw util::DataError(model_file.string() + ": '" + name + "' has shape " + shape_text(tensor.sizes()) +
                            ", the policy expects " + shape_text(target->second.sizes()));
    if (target->second.scalar_type() == tensor.scalar_type()) continue;
    if (!target->second.is_floating_point() || !tensor.is_floating_point())
      throw util::DataError(model_file.string() + ": '" + name + "' has dtype " +
                            std::string(c10::toString(tensor.scalar_type())) + ", the policy expects " +
                            std::string(c10::toString(target->second.scalar_type())));
    casts.emplace(tensor.scalar_type(), target->second.scalar_type());
  }
  if (!casts.empty()) {
    std::string pairs;
    for (const auto& [from, to] : casts)
      pairs += (pairs.empty() ? "" : ", ") + util::dtype_name(from) + " -> " + util::dtype_name(to);
    spdlog::info("{}: casting pretrained weights {} as LeRobot does", model_file.string(), pairs);
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : content.tensors) {
    auto target = targets.find(name);
    if (target == targets.end()) continue;
    if (!nn::is_released(target->second))
      target->second.copy_(tensor);  // casts when the dtypes differ
    else if (target->second.scalar_type() == tensor.scalar_type())
      target->second.set_data(tensor);  // file-backed: the mapping's copy-on-write pages
    else
      policy.add_file_cast(target->second, tensor);  // cast when copied out, tensor by tensor
  }
  for (const auto& [name, tensor] : targets)
    if (!in_file.count(name) && nn::is_released(tensor))
      throw util::DataError(model_file.string() + ": '" + name +
                            "' is not in the file and the policy was built without initial weights to keep");
  return report;
}

}  // namespace

LoadReport load_state_dict(policy::Policy& policy, const fs::path& model_file, bool strict) {
  return load_tensors(policy, model_file, strict, io::MapMode::read_only);
}

namespace {

// use_peft: true without adapter_config.json: LeRobot's lerobot#3975 trap (a hand-typed use_peft makes
// it take the base for adapters), explained.
void require_adapter_config(const fs::path& dir) {
  if (fs::exists(dir / kAdapterConfigFile)) return;
  throw util::ConfigError(
      (dir / kConfigFile).string() + " says use_peft: true, and " + dir.string() + " has no " + kAdapterConfigFile,
      "use_peft marks a folder of LoRA adapters (LeRobot writes it with them); to train "
      "adapters on this policy set policy.peft.method_type=LORA (lerobot-train: --peft.*), "
      "or set use_peft to false in config.json");
}

}  // namespace

PretrainedBuildInputs build_inputs(const fs::path& dir, const nlohmann::json& changes, const DatasetFeatures& dataset) {
  const std::string where = (dir / kConfigFile).string();
  auto config = policy::apply_policy_changes(policy::read_policy_config(dir), changes, where);
  // use_peft: the folder holds LoRA adapters, which load_pretrained attaches after building the
  // base policy; without adapter_config.json it is LeRobot's lerobot#3975 trap.
  if (config.contains("use_peft") && config["use_peft"] == true) {
    require_adapter_config(dir);
    config["use_peft"] = false;
  }
  PretrainedBuildInputs inputs;
  std::optional<policy::PolicyFeatures> from_dataset;
  try {
    // Features go in as ordered lists: their order is the camera order, which a sorted json object
    // would lose.
    for (const auto& [field, side, dataset_side] :
         {std::tuple{"input_features", &inputs.features.inputs, &policy::PolicyFeatures::inputs},
          {"output_features", &inputs.features.outputs, &policy::PolicyFeatures::outputs}}) {
      if (config.contains(field)) {
        if (!config[field].is_null()) *side = policy::PolicyFeatures::list_from_json(config[field], field);
        config.erase(field);
      }
      if (!side->empty() || !dataset) continue;
      if (!from_dataset) from_dataset = dataset();
      *side = (*from_dataset).*dataset_side;
      spdlog::info("{}: no {}; taken from the dataset ({} feature(s)), as LeRobot's make_policy does", where, field,
                   side->size());
    }
  } catch (const util::Error& error) {
    throw util::ConfigError(where + ": " + error.what(), error.hint());
  }
  // The backbone's weights are in model.safetensors. LeRobot's config names torchvision weights, which
  // LeRobot loads at construction (from its hub cache, downloading if absent) only for from_pretrained
  // to overwrite them with the checkpoint's; lrhost builds the backbone without them and loads the
  // file, so fine-tuning a folder never needs the torch hub file.
  if (config.contains("pretrained_backbone_weights") && !config["pretrained_backbone_weights"].is_null()) {
    spdlog::info("{}: pretrained_backbone_weights {} ignored: the backbone comes from {}", (dir / kConfigFile).string(),
                 config["pretrained_backbone_weights"].dump(), kModelFile);
    config["pretrained_backbone_weights"] = nullptr;
  }
  inputs.config = nlohmann::json(config);
  return inputs;
}

std::shared_ptr<policy::Policy> build_from_config(const fs::path& dir, const nlohmann::json& changes,
                                                  const DatasetFeatures& dataset) {
  auto inputs = build_inputs(dir, changes, dataset);
  try {
    return policy::create_policy(inputs.config, inputs.features);
  } catch (const util::Error& error) {
    const auto* spec = policy::find_policy_spec(inputs.config.value("type", std::string()));
    if (spec && spec->missing_pretrained_extras)
      if (auto missing = spec->missing_pretrained_extras(dir, inputs.config))
        throw util::ConfigError(
            missing->first + ", and " + (dir / kConfigFile).string() + " does not fit it: " + error.what(),
            missing->second);
    throw util::ConfigError((dir / kConfigFile).string() + ": " + error.what(), error.hint());
  }
}

namespace {

// Builds the policy `config_dir`'s config.json describes (with `changes`) and gives it the weights of
// `weights_dir`'s model.safetensors: the same folder, or an adapter folder's base.
std::shared_ptr<policy::Policy> build_with_weights(const fs::path& config_dir, const fs::path& weights_dir, bool strict,
                                                   const nlohmann::json& changes, WeightLoading loading,
                                                   const DatasetFeatures& dataset) {
  std::shared_ptr<policy::Policy> policy;
  if (loading == WeightLoading::file_backed) {
    // Built block by block onto the meta device, then pointed at the file's pages.
    nn::DeferredInit deferred;
    policy = build_from_config(config_dir, changes, dataset);
    nn::release_parameters(*policy);
  } else {
    policy = build_from_config(config_dir, changes, dataset);
  }
  load_tensors(*policy, weights_dir / kModelFile, strict,
               loading == WeightLoading::file_backed ? io::MapMode::copy_on_write : io::MapMode::read_only);
  policy->set_weights_file_backed(loading == WeightLoading::file_backed);
  if (policy::PolicyProcessors::present(config_dir))
    policy->set_processors(std::make_shared<policy::PolicyProcessors>(policy::PolicyProcessors::load(config_dir)));
  return policy;
}

}  // namespace

std::shared_ptr<policy::Policy> build_with_base_weights(const nlohmann::json& config,
                                                        const policy::PolicyFeatures& features,
                                                        const fs::path& weights_file) {
  std::shared_ptr<policy::Policy> policy;
  {
    nn::DeferredInit deferred;
    policy = policy::create_policy(config, features);
    nn::release_parameters(*policy);
  }
  load_tensors(*policy, weights_file, /*strict=*/true, io::MapMode::copy_on_write);
  policy->set_weights_file_backed(true);
  return policy;
}

namespace {

// A LeRobot PEFT folder (factory.py's use_peft branch): the base from adapter_config.json's
// base_model_name_or_path (a folder or a hub id in the local cache), built with this folder's
// config, then this folder's adapters and processors.
std::shared_ptr<policy::Policy> load_adapter_folder(const fs::path& dir, bool strict, const nlohmann::json& changes,
                                                    WeightLoading loading, const DatasetFeatures& dataset) {
  require_adapter_config(dir);
  const auto adapter = read_adapter_config(dir);
  // policy.peft on an adapter folder: lerobot-train skips wrap_with_peft and trains the folder's
  // adapters whatever --peft.* says; lrhost does so only when they say the same, and refuses otherwise.
  std::optional<policy::PeftSettings> asked;
  if (changes.is_object() && changes.contains(policy::kPeftKey))
    asked = policy::PeftSettings::read(changes[policy::kPeftKey], "policy.peft");
  if (asked) {
    const auto type = policy::read_policy_config(dir).value("type", std::string());
    const auto differ = policy::lora_differences(*asked, adapter.settings, type);
    if (!differ.empty())
      throw util::ConfigError("policy.peft: " + dir.string() + " holds LoRA adapters already, and policy.peft asks " +
                                  "for others (" + util::quoted_list(differ) + ", asked vs the folder's " +
                                  kAdapterConfigFile + ")",
                              "drop policy.peft.* (lerobot-train: --peft.*) to go on training the folder's adapters, "
                              "or give the base folder to train new ones");
    spdlog::info("policy.peft: {} holds these LoRA adapters already; training them (as lerobot-train does)",
                 dir.string());
  }
  if (adapter.base_model_name_or_path.empty())
    throw util::DataError((dir / kAdapterConfigFile).string() + " names no base_model_name_or_path",
                          "set it to the folder or hub id of the policy the adapters were trained on");
  const fs::path base = policy::resolve_pretrained_dir(adapter.base_model_name_or_path);
  auto policy = build_with_weights(dir, base, strict, changes, loading, dataset);
  policy::add_lora_adapters(*policy, adapter.settings, adapter.base_model_name_or_path);
  load_adapter_state(*policy, dir / kAdapterModelFile);
  return policy;
}

}  // namespace

bool is_adapter_folder(const fs::path& dir) {
  const auto config = policy::read_policy_config(dir);
  return config.contains("use_peft") && config["use_peft"] == true;
}

std::shared_ptr<policy::Policy> load_pretrained(const fs::path& path_or_id, bool strict, const nlohmann::json& changes,
                                                WeightLoading loading, const DatasetFeatures& dataset) {
  const fs::path dir = policy::resolve_pretrained_dir(path_or_id);
  std::shared_ptr<policy::Policy> policy;
  if (is_adapter_folder(dir)) {
    policy = load_adapter_folder(dir, strict, changes, loading, dataset);
  } else {
    // The recipe's policy.peft: LoRA adapters on the loaded weights, as lerobot-train's
    // wrap_with_peft after make_policy; the adapter folder's base is the path as the user gave it.
    std::optional<policy::PeftSettings> peft;
    if (changes.is_object() && changes.contains(policy::kPeftKey))
      peft = policy::PeftSettings::read(changes[policy::kPeftKey], "policy.peft");
    // The adapters draw their init from the generator as the caller left it: building the base (whose
    // random init the file overwrites) does not consume it, so `manual_seed(S)` before the load draws
    // what PEFT draws after `torch.manual_seed(S)` just before wrap_with_peft, whatever the loading mode.
    auto generator = at::detail::getDefaultCPUGenerator();
    torch::Tensor seeded;
    if (peft) {
      std::lock_guard<std::mutex> lock(generator.mutex());
      seeded = generator.get_state();
    }
    policy = build_with_weights(dir, dir, strict, changes, loading, dataset);
    if (peft) {
      {
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator.set_state(seeded);
      }
      policy::add_lora_adapters(*policy, *peft, path_or_id.string());
    }
  }
  policy->eval();
  return policy;
}

}  // namespace lrhost::ckpt
