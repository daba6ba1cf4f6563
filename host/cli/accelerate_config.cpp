// accelerate's config file mapped key by key onto lrhost; see accelerate_config.hpp. The schema is
// accelerate 1.15's ClusterConfig (commands/config/config_args.py) with its fsdp_config and
// deepspeed_config keys (commands/config/cluster.py, utils/dataclasses.py).
#include "host/cli/accelerate_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "host/config/overrides.hpp"
#include "host/policy/policy_spec.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::cli {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using util::ConfigError;

namespace {

// A YAML node as JSON; scalars stay strings (yaml-cpp keeps no types), and the readers below take
// either spelling, so a YAML file and a JSON one read alike.
json from_yaml(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const auto& item : node) object[item.first.as<std::string>()] = from_yaml(item.second);
      return object;
    }
    case YAML::NodeType::Sequence: {
      json list = json::array();
      for (const auto& item : node) list.push_back(from_yaml(item));
      return list;
    }
    case YAML::NodeType::Scalar:
      return node.as<std::string>();
    default:
      return nullptr;
  }
}

json load(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw util::IoError("accelerate config " + file.string() + ": no such file",
                        "give the file `accelerate config` saved, e.g. --config_file fsdp.yaml");
  json document;
  if (file.extension() == ".json") {
    std::ifstream in(file);
    try {
      document = json::parse(in);
    } catch (const json::parse_error& error) {
      throw util::IoError("accelerate config " + file.string() + ": not valid JSON: " + error.what());
    }
  } else {
    try {
      document = from_yaml(YAML::LoadFile(file.string()));
    } catch (const YAML::Exception& error) {
      throw util::IoError("accelerate config " + file.string() + ": not valid YAML: " + error.what());
    }
  }
  if (!document.is_object())
    throw ConfigError("accelerate config " + file.string() + ": expected a mapping of accelerate's keys " +
                          "(distributed_type: ..., num_processes: ...), got " +
                          (document.is_array()  ? "a list"
                           : document.is_null() ? "an empty file"
                                                : "a single value"),
                      "write it with `accelerate config`, or see docs/lerobot.md (accelerate config files)");
  return document;
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

bool empty_value(const json& value) {
  return value.is_null() || ((value.is_object() || value.is_array()) && value.empty()) ||
         (value.is_string() && value.get<std::string>().empty());
}

// The value as written (strings without quotes), for the printed mapping.
std::string text(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// Reads one config file; every key it looks at is recorded, and a key never looked at is unknown.
class Mapper {
 public:
  Mapper(const fs::path& file, const AccelerateConfigContext& context) : file_(file), context_(context) {
    result_.file = file;
  }

  AccelerateConfigMapping run();

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& why, const std::string& hint = {}) const {
    throw ConfigError("accelerate config " + file_.string() + ": " + key + ": " + why, hint);
  }
  [[noreturn]] void refuse(const std::string& key, const json& value, const std::string& why) const {
    fail(key, text(value) + " cannot be honoured: " + why);
  }
  void line(const std::string& key, const json& value, const std::string& effect) {
    result_.lines.push_back(key + ": " + text(value) + " -> " + effect);
  }
  void no_effect(const std::string& key, const json& value, const std::string& why) {
    line(key, value, "no effect: " + why);
  }

  bool boolean(const std::string& key, const json& value) const {
    if (value.is_boolean()) return value.get<bool>();
    if (value.is_number_integer() && (value == 0 || value == 1)) return value == 1;
    if (value.is_string()) {
      const std::string word = util::lowercase(value.get<std::string>());
      if (word == "true" || word == "yes" || word == "1") return true;
      if (word == "false" || word == "no" || word == "0") return false;
    }
    fail(key, "expected true or false, got " + text(value));
  }
  std::optional<long long> integer(const json& value) const {
    if (value.is_number_integer()) return value.get<long long>();
    if (value.is_string()) {
      const std::string digits = value.get<std::string>();
      try {
        std::size_t used = 0;
        long long number = std::stoll(digits, &used);
        if (used == digits.size()) return number;
      } catch (const std::exception&) {
      }
    }
    return std::nullopt;
  }
  long long whole(const std::string& key, const json& value, long long minimum) const {
    auto number = integer(value);
    if (!number || *number < minimum)
      fail(key, "expected a whole number >= " + std::to_string(minimum) + ", got " + text(value));
    return *number;
  }

  // The flag typed beside the file that sets `setting`, if any.
  const std::string* typed(const std::string& setting) const {
    auto found = context_.typed.find(setting);
    return found == context_.typed.end() ? nullptr : &found->second;
  }
  // `setting=value` for the recipe (one line for the key, several settings at once), each unless
  // typed beside the file; the line says which.
  void set(const std::string& key, const json& file_value,
           const std::vector<std::pair<std::string, std::string>>& settings, const std::string& why = {}) {
    std::string effect, overridden;
    for (const auto& [setting, value] : settings) {
      effect += (effect.empty() ? "" : " ") + setting + "=" + value;
      if (const auto* flag = typed(setting))
        overridden += "; overridden: " + *flag + " typed beside the file wins";
      else
        result_.overrides.push_back(setting + "=" + value);
    }
    line(key, file_value, effect + (why.empty() ? "" : " (" + why + ")") + overridden);
  }
  void set(const std::string& key, const json& file_value, const std::string& setting, const std::string& value,
           const std::string& why = {}) {
    set(key, file_value, {{setting, value}}, why);
  }

  void top_level(const json& document);
  void fsdp(const json& table);
  void deepspeed(const json& table);
  // Sharding as lrhost's parallelism and accelerator.fsdp keys: dp_shard = -1 (one shard group over
  // every rank) with ZeRO-3 (reshard) or ZeRO-2; nullopt: plain DDP.
  void shard(const std::string& key, const json& value, std::optional<bool> reshard, const std::string& why);
  std::string wrap_units(const std::string& key, const json& value);

  fs::path file_;
  const AccelerateConfigContext& context_;
  AccelerateConfigMapping result_;
  std::string distributed_type_;
  bool sharded_ = false;  // a shard() call set dp_shard already
};

void Mapper::shard(const std::string& key, const json& value, std::optional<bool> reshard, const std::string& why) {
  if (!reshard) {
    line(key, value, "DDP (parallelism.dp_shard=1, the recipe's default): " + why);
    return;
  }
  std::vector<std::pair<std::string, std::string>> settings;
  if (!sharded_) settings = {{"parallelism.dp_shard", "-1"}, {"parallelism.dp_replicate", "1"}};
  sharded_ = true;
  settings.emplace_back("accelerator.fsdp.reshard_after_forward", *reshard ? "true" : "false");
  set(key, value, settings,
      std::string(*reshard ? "FSDP ZeRO-3: parameters re-gathered for backward"
                           : "FSDP ZeRO-2: parameters kept gathered from forward to backward") +
          ", one shard group over every rank; " + why);
}

// fsdp_transformer_layer_cls_to_wrap (LeRobot's class names, comma-separated or a list) as the
// policy's FSDP unit types.
std::string Mapper::wrap_units(const std::string& key, const json& value) {
  std::vector<std::string> names;
  auto add = [&](std::string name) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (!name.empty()) names.push_back(name);
  };
  if (value.is_array()) {
    for (const auto& item : value) add(text(item));
  } else {
    const std::string list = text(value);
    for (std::size_t start = 0, comma; start <= list.size(); start = comma + 1) {
      comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      add(list.substr(start, comma - start));
    }
  }
  if (names.empty()) fail(key, "expected LeRobot class names, e.g. ACTEncoderLayer,ACTDecoderLayer");
  if (context_.policy == nullptr)
    fail(key, "the policy type is not known here, so its classes cannot be matched",
         "give --policy.type or --policy.path");
  const auto& classes = context_.policy->fsdp_lerobot_classes;
  std::vector<std::string> units;
  for (const auto& name : names) {
    auto found = std::find_if(classes.begin(), classes.end(), [&](const auto& entry) { return entry.first == name; });
    if (found == classes.end()) {
      std::vector<std::string> known;
      for (const auto& entry : classes) known.push_back(entry.first);
      fail(key, "'" + name + "' is not a class of LeRobot's " + context_.policy->type + " policy that lrhost shards",
           "the " + context_.policy->type + " policy's FSDP units: " + util::quoted_list(known));
    }
    if (std::find(units.begin(), units.end(), found->second) == units.end()) units.push_back(found->second);
  }
  std::string joined;
  for (const auto& unit : units) joined += (joined.empty() ? "" : ",") + unit;
  return joined;
}

void Mapper::fsdp(const json& table) {
  if (!table.is_object()) fail("fsdp_config", "expected a mapping of fsdp_* keys, got " + text(table));
  // accelerate reads `version: 2` inside fsdp_config as fsdp_version (launch.py adds the prefix).
  json config = json::object();
  for (const auto& [name, value] : table.items()) config[name.starts_with("fsdp_") ? name : "fsdp_" + name] = value;
  auto key = [](const std::string& name) { return "fsdp_config." + name; };
  auto get = [&](const std::string& name) -> const json* { return config.contains(name) ? &config[name] : nullptr; };
  int version = 1;  // accelerate's default without fsdp_version
  if (const auto* value = get("fsdp_version")) {
    version = static_cast<int>(whole(key("fsdp_version"), *value, 1));
    if (version > 2) fail(key("fsdp_version"), "expected 1 or 2, got " + text(*value));
    line(key("fsdp_version"), *value,
         "accepted: lrhost's FSDP is FSDP2-style (per-parameter shards) whichever version is named");
  }

  // The sharding strategy: fsdp_sharding_strategy (FSDP1, deprecated name) or
  // fsdp_reshard_after_forward (a strategy under FSDP1, true/false under FSDP2). FULL_SHARD = 1,
  // SHARD_GRAD_OP = 2, NO_SHARD = 3, HYBRID_SHARD = 4, HYBRID_SHARD_ZERO2 = 5 (accelerate's numbering).
  auto canonical = [&](const std::string& name, const json& value) {
    std::string word = upper(text(value));
    if (auto number = integer(value); number && *number >= 1 && *number <= 5) {
      static const char* names[] = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"};
      word = names[*number - 1];
    }
    if (word == "_HYBRID_SHARD_ZERO2") word = "HYBRID_SHARD_ZERO2";
    static const std::set<std::string> known{"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                             "HYBRID_SHARD_ZERO2"};
    if (!known.contains(word))
      fail(key(name),
           "expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD or HYBRID_SHARD_ZERO2 (or 1-5), got " +
               text(value));
    return word;
  };
  // true: ZeRO-3, false: ZeRO-2, nullopt: DDP.
  auto strategy = [&](const std::string& name, const json& value) -> std::optional<bool> {
    const std::string word = canonical(name, value);
    if (word == "NO_SHARD") return std::nullopt;
    return word == "FULL_SHARD" || word == "HYBRID_SHARD";
  };
  auto strategy_why = [&](const std::string& name, const json& value) {
    const std::string word = canonical(name, value);
    if (word.starts_with("HYBRID"))
      return word + ": hybrid with the machine as shard group, which on one machine is every rank";
    return word + (word == "NO_SHARD" ? " replicates like DDP" : "");
  };
  const json* sharding = get("fsdp_sharding_strategy");
  const json* reshard = get("fsdp_reshard_after_forward");
  if (sharding && reshard && version == 1 &&
      strategy("fsdp_sharding_strategy", *sharding) != strategy("fsdp_reshard_after_forward", *reshard))
    fail(key("fsdp_sharding_strategy"), "disagrees with fsdp_reshard_after_forward: " + text(*reshard),
         "keep one of them (fsdp_reshard_after_forward is accelerate's current name)");
  if (reshard) {
    if (version == 2) {
      const json& value = *reshard;
      if (!value.is_boolean() &&
          !(value.is_string() && (util::lowercase(text(value)) == "true" || util::lowercase(text(value)) == "false")))
        fail(key("fsdp_reshard_after_forward"), "fsdp_version 2 takes true or false, got " + text(value),
             "true = FULL_SHARD (ZeRO-3), false = SHARD_GRAD_OP (ZeRO-2)");
      shard(key("fsdp_reshard_after_forward"), value, boolean(key("fsdp_reshard_after_forward"), value),
            "fsdp2's reshard_after_forward");
    } else {
      if (reshard->is_boolean())
        fail(key("fsdp_reshard_after_forward"), "fsdp_version 1 takes a sharding strategy, got " + text(*reshard),
             "FULL_SHARD (ZeRO-3), SHARD_GRAD_OP (ZeRO-2), NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2; or "
             "fsdp_version: 2");
      shard(key("fsdp_reshard_after_forward"), *reshard, strategy("fsdp_reshard_after_forward", *reshard),
            strategy_why("fsdp_reshard_after_forward", *reshard));
    }
  }
  if (sharding) {
    if (reshard)
      line(key("fsdp_sharding_strategy"), *sharding,
           version == 2 ? "no effect: fsdp_version 2 reads fsdp_reshard_after_forward"
                        : "the same strategy as fsdp_reshard_after_forward");
    else
      shard(key("fsdp_sharding_strategy"), *sharding, strategy("fsdp_sharding_strategy", *sharding),
            strategy_why("fsdp_sharding_strategy", *sharding));
  }
  if (!sharding && !reshard) shard("distributed_type", json("FSDP"), true, "accelerate's default strategy FULL_SHARD");

  // Wrap units.
  std::string wrap_policy = "TRANSFORMER_BASED_WRAP";
  const std::string declared =
      context_.policy ? util::quoted_list(context_.policy->fsdp_wrap_module_types) : std::string("the policy's units");
  if (const auto* value = get("fsdp_auto_wrap_policy")) {
    wrap_policy = upper(text(*value));
    if (wrap_policy == "TRANSFORMER_BASED_WRAP") {
      line(key("fsdp_auto_wrap_policy"), *value,
           "FSDP units are module types: fsdp_transformer_layer_cls_to_wrap's, else the policy's own (" + declared +
               ")");
    } else if (wrap_policy == "SIZE_BASED_WRAP") {
      line(key("fsdp_auto_wrap_policy"), *value,
           "the policy's own FSDP units instead (" + declared +
               "): lrhost wraps by module type, not size (same training, a different memory layout)");
    } else if (wrap_policy == "NO_WRAP") {
      refuse(key("fsdp_auto_wrap_policy"), *value,
             "lrhost shards per unit and never wraps only the root (that gathers the whole model at once); use "
             "TRANSFORMER_BASED_WRAP");
    } else {
      fail(key("fsdp_auto_wrap_policy"),
           "expected TRANSFORMER_BASED_WRAP, SIZE_BASED_WRAP or NO_WRAP, got " + text(*value));
    }
  }
  if (const auto* value = get("fsdp_transformer_layer_cls_to_wrap")) {
    if (wrap_policy == "SIZE_BASED_WRAP") {
      no_effect(key("fsdp_transformer_layer_cls_to_wrap"), *value,
                "accelerate reads it only with TRANSFORMER_BASED_WRAP");
    } else {
      set(key("fsdp_transformer_layer_cls_to_wrap"), *value, "accelerator.fsdp.wrap_modules",
          wrap_units(key("fsdp_transformer_layer_cls_to_wrap"), *value), "the policy's FSDP units of those classes");
    }
  }
  if (const auto* value = get("fsdp_min_num_params"))
    no_effect(key("fsdp_min_num_params"), *value, "lrhost wraps by module type (" + declared + "), not by size");

  if (const auto* value = get("fsdp_activation_checkpointing")) {
    const bool on = boolean(key("fsdp_activation_checkpointing"), *value);
    const bool has_field = context_.policy && context_.policy->default_config &&
                           context_.policy->default_config().contains("gradient_checkpointing");
    if (!on)
      no_effect(key("fsdp_activation_checkpointing"), *value, "the policy's gradient_checkpointing stays as it is");
    else if (has_field)
      set(key("fsdp_activation_checkpointing"), *value, "policy.gradient_checkpointing", "true",
          "recomputes activations in backward");
    else
      refuse(key("fsdp_activation_checkpointing"), *value,
             "the " + (context_.policy ? context_.policy->type : std::string("run's")) +
                 " policy has no gradient checkpointing in lrhost (policy.gradient_checkpointing); set it false");
  }
  if (const auto* value = get("fsdp_state_dict_type")) {
    const std::string kind = upper(text(*value));
    if (kind != "FULL_STATE_DICT" && kind != "SHARDED_STATE_DICT" && kind != "LOCAL_STATE_DICT")
      fail(key("fsdp_state_dict_type"),
           "expected FULL_STATE_DICT, SHARDED_STATE_DICT or LOCAL_STATE_DICT, got " + text(*value));
    line(key("fsdp_state_dict_type"), *value,
         "accepted: lrhost writes both kinds, a full pretrained_model/model.safetensors that LeRobot loads and "
         "per-rank shards in training_state/ that resume at any rank count");
  }
  if (const auto* value = get("fsdp_offload_params")) {
    if (boolean(key("fsdp_offload_params"), *value))
      refuse(key("fsdp_offload_params"), *value,
             "lrhost keeps parameters, gradients and optimizer state on the GPU (no CPU offload); shard over more "
             "GPUs instead, or set it false");
    no_effect(key("fsdp_offload_params"), *value, "nothing is offloaded, as in lrhost");
  }
  if (const auto* value = get("fsdp_use_orig_params"))
    no_effect(key("fsdp_use_orig_params"), *value,
              "lrhost shards each original parameter (FSDP2-style), so the optimizer sees them either way");
  if (const auto* value = get("fsdp_sync_module_states"))
    no_effect(
        key("fsdp_sync_module_states"), *value,
        "lrhost always starts every rank from rank 0's weights (broadcast at prepare, or the same pretrained file)");
  if (const auto* value = get("fsdp_forward_prefetch"))
    no_effect(key("fsdp_forward_prefetch"), *value,
              "on a GPU lrhost gathers the next unit on its own stream while the current one computes");
  if (const auto* value = get("fsdp_backward_prefetch")) {
    const std::string kind = upper(text(*value));
    if (kind != "BACKWARD_PRE" && kind != "BACKWARD_POST" && kind != "NO_PREFETCH")
      fail(key("fsdp_backward_prefetch"), "expected BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH, got " + text(*value));
    no_effect(key("fsdp_backward_prefetch"), *value, "lrhost's gathers for backward follow its own schedule");
  }
  if (const auto* value = get("fsdp_cpu_ram_efficient_loading"))
    no_effect(key("fsdp_cpu_ram_efficient_loading"), *value,
              "lrhost reads a pretrained folder's weights from the file and each rank copies only its shard");

  static const std::set<std::string> known{"fsdp_version",
                                           "fsdp_sharding_strategy",
                                           "fsdp_reshard_after_forward",
                                           "fsdp_auto_wrap_policy",
                                           "fsdp_transformer_layer_cls_to_wrap",
                                           "fsdp_min_num_params",
                                           "fsdp_activation_checkpointing",
                                           "fsdp_state_dict_type",
                                           "fsdp_offload_params",
                                           "fsdp_use_orig_params",
                                           "fsdp_sync_module_states",
                                           "fsdp_forward_prefetch",
                                           "fsdp_backward_prefetch",
                                           "fsdp_cpu_ram_efficient_loading"};
  for (const auto& [name, value] : config.items())
    if (!known.contains(name))
      fail(key(name), "unknown key",
           "accelerate 1.15's fsdp_config keys: " +
               util::quoted_list(std::vector<std::string>(known.begin(), known.end())));
}

void Mapper::deepspeed(const json& table) {
  if (!table.is_object()) fail("deepspeed_config", "expected a mapping of DeepSpeed keys, got " + text(table));
  auto key = [](const std::string& name) { return "deepspeed_config." + name; };
  std::set<std::string> seen;
  auto get = [&](const std::string& name) -> const json* {
    seen.insert(name);
    return table.contains(name) ? &table[name] : nullptr;
  };
  if (const auto* value = get("zero_stage")) {
    const long long stage = whole(key("zero_stage"), *value, 0);
    if (stage > 3) fail(key("zero_stage"), "expected 0, 1, 2 or 3, got " + text(*value));
    if (stage == 0)
      shard(key("zero_stage"), *value, std::nullopt, "ZeRO off");
    else
      shard(key("zero_stage"), *value, stage == 3,
            stage == 1 ? "lrhost has no ZeRO-1 (optimizer state only); its nearest, ZeRO-2, shards gradients too"
                       : "lrhost's FSDP in place of DeepSpeed's ZeRO-" + std::to_string(stage));
  } else {
    shard("distributed_type", json("DEEPSPEED"), std::nullopt, "no zero_stage given (DeepSpeed's default 0)");
  }
  if (const auto* value = get("gradient_accumulation_steps")) {
    if (util::lowercase(text(*value)) == "auto")
      no_effect(key("gradient_accumulation_steps"), *value, "lerobot-train sets no accumulation (1 step)");
    else
      set(key("gradient_accumulation_steps"), *value, "accelerator.gradient_accumulation_steps",
          std::to_string(whole(key("gradient_accumulation_steps"), *value, 1)),
          "effective batch = batch_size x ranks x these steps");
  }
  if (const auto* value = get("gradient_clipping")) {
    if (util::lowercase(text(*value)) == "auto") {
      no_effect(key("gradient_clipping"), *value, "the policy's optimizer.grad_clip_norm stays");
    } else {
      double norm = -1;
      try {
        norm = value->is_number() ? value->get<double>() : std::stod(text(*value));
      } catch (const std::exception&) {
      }
      if (!(norm >= 0))
        fail(key("gradient_clipping"), "expected a number >= 0 (the max gradient norm), got " + text(*value));
      set(key("gradient_clipping"), *value, "optimizer.grad_clip_norm", text(*value));
    }
  }
  for (const char* name : {"offload_optimizer_device", "offload_param_device"}) {
    if (const auto* value = get(name)) {
      if (!empty_value(*value) && util::lowercase(text(*value)) != "none")
        refuse(key(name), *value,
               "lrhost keeps parameters and optimizer state on the GPU (no CPU/NVMe offload); set it to none");
      no_effect(key(name), *value, "nothing is offloaded, as in lrhost");
    }
  }
  for (const char* name : {"offload_optimizer_nvme_path", "offload_param_nvme_path"})
    if (const auto* value = get(name))
      no_effect(key(name), *value, "used only with NVMe offload, which lrhost refuses");
  if (const auto* value = get("zero3_init_flag"))
    no_effect(key("zero3_init_flag"), *value,
              "lrhost builds the policy on every rank and shards it at prepare (a pretrained folder's weights are "
              "copied shard by shard from the file)");
  if (const auto* value = get("zero3_save_16bit_model"))
    no_effect(key("zero3_save_16bit_model"), *value,
              "lrhost saves a full pretrained_model/model.safetensors in the policy's dtype (fp32 unless "
              "policy.dtype=bfloat16) that LeRobot loads, plus per-rank shards");
  if (const auto* value = get("deepspeed_multinode_launcher"))
    no_effect(key("deepspeed_multinode_launcher"), *value, "lrhost's own launcher starts the ranks of this machine");
  if (const auto* value = get("deepspeed_config_file"); value && !empty_value(*value))
    refuse(key("deepspeed_config_file"), *value,
           "lrhost does not read DeepSpeed's JSON; give zero_stage, gradient_clipping, ... in deepspeed_config");
  for (const char* name : {"deepspeed_hostfile", "deepspeed_inclusion_filter", "deepspeed_exclusion_filter"})
    if (const auto* value = get(name); value && !empty_value(*value))
      refuse(key(name), *value,
             "lrhost's launcher starts ranks on this machine; for several machines run `lrhost RECIPE --nnodes N "
             "--node-rank K --master-addr HOST` on each (docs/multi_gpu.md)");
  if (const auto* value = get("deepspeed_moe_layer_cls_names"); value && !empty_value(*value))
    refuse(key("deepspeed_moe_layer_cls_names"), *value, "lrhost's policies have no mixture-of-experts layers");
  for (const auto& [name, value] : table.items()) {
    if (!seen.contains(name))
      fail(key(name), "unknown key",
           "accelerate 1.15's deepspeed_config keys: " +
               util::quoted_list(std::vector<std::string>(seen.begin(), seen.end())));
    if (empty_value(value) &&
        (name == "deepspeed_config_file" || name == "deepspeed_hostfile" || name == "deepspeed_inclusion_filter" ||
         name == "deepspeed_exclusion_filter" || name == "deepspeed_moe_layer_cls_names"))
      no_effect(key(name), value, "unset");
  }
}

void Mapper::top_level(const json& document) {
  std::set<std::string> seen;
  auto get = [&](const std::string& name) -> const json* {
    seen.insert(name);
    return document.contains(name) && !document[name].is_null() ? &document[name] : nullptr;
  };
  // Keys that only say where accelerate runs (or TPU pods): no counterpart.
  static const std::vector<std::pair<std::string, std::string>> kNoEffect{
      {"debug", "accelerate's debug mode checks collective shapes across ranks; lrhost's --verbose logs more"},
      {"downcast_bf16", "TPU only"},
      {"enable_cpu_affinity", "lrhost does not pin ranks to CPU cores"},
      {"main_training_function", "the function accelerate's notebook/TPU launchers call; lrhost runs the recipe"},
      {"rdzv_backend", "lrhost's launcher hosts its own rendezvous store"},
      {"same_network", "used by multi-machine launches only"},
      {"tpu_name", "TPU only"},
      {"tpu_zone", "TPU only"},
      {"tpu_use_cluster", "TPU only"},
      {"tpu_use_sudo", "TPU only"},
      {"tpu_vm", "TPU only"},
      {"tpu_env", "TPU only"},
      {"command_file", "TPU pods only"},
      {"commands", "TPU pods only"},
  };

  if (const auto* value = get("compute_environment")) {
    if (text(*value) != "LOCAL_MACHINE")
      refuse("compute_environment", *value, "lrhost runs on this machine, not on Amazon SageMaker");
    no_effect("compute_environment", *value, "lrhost runs on this machine");
  }
  const json* type = get("distributed_type");
  if (type == nullptr)
    fail("distributed_type", "missing; accelerate needs it too", "NO, MULTI_GPU, MULTI_CPU, FSDP or DEEPSPEED");
  distributed_type_ = upper(text(*type));
  static const std::set<std::string> kTypes{"NO", "MULTI_GPU", "MULTI_CPU", "FSDP", "DEEPSPEED"};
  if (!kTypes.contains(distributed_type_))
    refuse("distributed_type", *type,
           "lrhost trains on CUDA GPUs or CPUs with NO, MULTI_GPU, MULTI_CPU, FSDP or DEEPSPEED (mapped to its own "
           "DDP/FSDP)");

  if (const auto* value = get("num_machines"); value && whole("num_machines", *value, 1) > 1) {
    auto field = [&](const std::string& name, const std::string& placeholder) {
      const json* given = get(name);
      return given ? text(*given) : placeholder;
    };
    refuse("num_machines", *value,
           "lerobot-train's mapping runs on one machine; on each machine run `lrhost RECIPE --nnodes " + text(*value) +
               " --node-rank " + field("machine_rank", "K") + " --master-addr " + field("main_process_ip", "HOST") +
               " --master-port " + field("main_process_port", "PORT") +
               " ...` with the recipe and overrides that `lrhost lerobot-train ... --dry-run` prints without "
               "num_machines (docs/multi_gpu.md)");
  } else if (value) {
    no_effect("num_machines", *value, "one machine, as lrhost lerobot-train runs");
  }
  if (const auto* value = get("machine_rank")) no_effect("machine_rank", *value, "one machine: it is machine 0");
  if (const auto* value = get("main_process_ip"))
    no_effect("main_process_ip", *value, "one machine: ranks meet locally");
  if (const auto* value = get("main_process_port"))
    no_effect("main_process_port", *value,
              "lrhost's launcher binds its store on a free port, so two jobs never collide");

  // The processes.
  if (const auto* value = get("num_processes")) {
    const long long count = whole("num_processes", *value, -1);
    if (count == 0) fail("num_processes", "expected a whole number >= 1, got 0");
    if (const auto* flag = typed("nproc")) {
      line("num_processes", *value, "overridden: " + *flag + " typed beside the file wins");
    } else if (distributed_type_ == "NO") {
      no_effect("num_processes", *value, "distributed_type NO runs one process");
    } else if (count == -1) {
      fail("num_processes", "-1 (unset) with distributed_type " + distributed_type_,
           "give --num_processes=N beside the file, as accelerate asks");
    } else {
      result_.num_processes = static_cast<int>(count);
      line("num_processes", *value, "--nproc " + std::to_string(count) + " (one rank per GPU when there are GPUs)");
    }
  } else if (distributed_type_ != "NO" && !typed("nproc")) {
    fail("num_processes", "missing with distributed_type " + distributed_type_,
         "give --num_processes=N beside the file, as accelerate asks");
  }
  if (const auto* value = get("gpu_ids")) {
    std::string ids = value->is_array() ? std::string() : text(*value);
    if (value->is_array())
      for (const auto& id : *value) ids += (ids.empty() ? "" : ",") + text(id);
    if (const auto* flag = typed("gpu_ids")) {
      line("gpu_ids", *value, "overridden: " + *flag + " typed beside the file wins");
    } else if (auto list = cuda_visible_devices_of(ids, "accelerate config " + file_.string() + ": gpu_ids")) {
      result_.cuda_visible_devices = list;
      line("gpu_ids", *value,
           "CUDA_VISIBLE_DEVICES=" + *list +
               " for the run, as accelerate sets it (replacing any CUDA_VISIBLE_DEVICES already set): rank k uses the "
               "k-th of these GPUs");
    } else {
      line("gpu_ids", *value, "every visible GPU (CUDA_VISIBLE_DEVICES left as it is)");
    }
  }
  if (const auto* value = get("use_cpu")) {
    if (!boolean("use_cpu", *value)) {
      no_effect("use_cpu", *value, "lrhost's --device stays (auto: the GPUs when there are some)");
    } else if (const auto* flag = typed("device")) {
      line("use_cpu", *value, "--device cpu; overridden: " + *flag + " typed beside the file wins");
    } else {
      result_.device = "cpu";
      line("use_cpu", *value, "--device cpu");
    }
  }
  if (distributed_type_ == "MULTI_CPU" && !result_.device && !typed("device")) result_.device = "cpu";

  if (const auto* value = get("mixed_precision")) {
    // PyYAML reads an unquoted `no` as false, which accelerate takes as "no" too.
    std::string mode = util::lowercase(text(*value));
    if (mode == "false") mode = "no";
    if (mode == "fp8") refuse("mixed_precision", *value, "lrhost trains in no (fp32), bf16 or fp16 mixed precision");
    if (mode != "no" && mode != "bf16" && mode != "fp16")
      fail("mixed_precision", "expected no, bf16, fp16 or fp8, got " + text(*value));
    set("mixed_precision", *value, "accelerator.mixed_precision", mode);
  }

  const std::string* device_flag = typed("device");
  const std::string type_effect =
      distributed_type_ == "NO"          ? "one process"
      : distributed_type_ == "MULTI_GPU" ? "DDP over the GPUs (lrhost's default for the recipe)"
      : distributed_type_ == "MULTI_CPU"
          ? "DDP over CPU ranks: --device cpu" +
                (device_flag ? "; overridden: " + *device_flag + " typed beside the file wins" : std::string())
      : distributed_type_ == "FSDP" ? "FSDP, as fsdp_config says"
                                    : "lrhost's DDP/FSDP in place of DeepSpeed, as deepspeed_config says";
  line("distributed_type", *type, type_effect);

  // The plugin tables: read for their own distributed_type, listed as no effect otherwise (accelerate
  // ignores them then too).
  const json* fsdp_table = get("fsdp_config");
  const json* deepspeed_table = get("deepspeed_config");
  if (distributed_type_ == "FSDP") {
    fsdp(fsdp_table ? *fsdp_table : json::object());
  } else if (fsdp_table) {
    no_effect("fsdp_config", *fsdp_table, "distributed_type is " + distributed_type_ + ", not FSDP");
  }
  if (distributed_type_ == "DEEPSPEED") {
    deepspeed(deepspeed_table ? *deepspeed_table : json::object());
  } else if (deepspeed_table) {
    no_effect("deepspeed_config", *deepspeed_table, "distributed_type is " + distributed_type_ + ", not DEEPSPEED");
  }
  if (const auto* value = get("dynamo_config")) {
    const bool off = empty_value(*value) || (value->is_object() && value->contains("dynamo_backend") &&
                                             upper(text((*value)["dynamo_backend"])) == "NO");
    no_effect(
        "dynamo_config", *value,
        off ? "no torch.compile, as lrhost runs" : "lrhost runs LibTorch eagerly (no torch.compile): same results");
  }
  if (const auto* value = get("fp8_config"))
    no_effect("fp8_config", *value, "used only by mixed_precision fp8, which lrhost refuses");
  for (const auto& [name, why] : std::vector<std::pair<std::string, std::string>>{
           {"parallelism_config",
            "lrhost's parallelism.dp_shard / parallelism.dp_replicate (typed as key=value) say this"},
           {"tp_config", "lrhost has no tensor parallelism"},
           {"megatron_lm_config", "lrhost does not run Megatron-LM"},
           {"mpirun_config", "lrhost's launcher starts the ranks, not mpirun"},
           {"ipex_config", "lrhost does not use Intel Extension for PyTorch"}}) {
    if (const auto* value = get(name)) {
      if (!empty_value(*value)) refuse(name, *value, why);
      no_effect(name, *value, "empty");
    }
  }
  for (const auto& [name, why] : kNoEffect)
    if (const auto* value = get(name)) no_effect(name, *value, why);

  for (const auto& [name, value] : document.items()) {
    if (!seen.contains(name)) {
      std::vector<std::string> known(seen.begin(), seen.end());
      auto suggestions = config::suggest_keys(name, known);
      fail(name, "unknown key (not in accelerate 1.15's config schema)",
           suggestions.empty() ? "docs/lerobot.md lists every key lrhost reads"
                               : "did you mean " + util::quoted_list(suggestions) + "?");
    }
    if (value.is_null()) no_effect(name, value, "unset");
  }
}

AccelerateConfigMapping Mapper::run() {
  top_level(load(file_));
  return std::move(result_);
}

}  // namespace

AccelerateConfigMapping map_accelerate_config(const fs::path& file, const AccelerateConfigContext& context) {
  return Mapper(file, context).run();
}

std::optional<std::string> cuda_visible_devices_of(const std::string& gpu_ids, const std::string& where) {
  if (util::lowercase(gpu_ids) == "all") return std::nullopt;
  std::string list;
  std::vector<std::string> seen;
  for (std::size_t start = 0; start <= gpu_ids.size();) {
    const std::size_t end = std::min(gpu_ids.find(',', start), gpu_ids.size());
    const std::string id = gpu_ids.substr(start, end - start);
    start = end + 1;
    if (id.empty() || !std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw ConfigError(where + ": expected all or GPU indices like 0,1, got '" + gpu_ids + "' ('" + id +
                        "' is not a GPU index)");
    if (std::find(seen.begin(), seen.end(), id) != seen.end())
      throw ConfigError(where + ": '" + gpu_ids + "' lists GPU " + id + " twice");
    seen.push_back(id);
    list += (list.empty() ? "" : ",") + id;
  }
  return list;
}

std::optional<fs::path> default_accelerate_config(
    const std::function<std::optional<std::string>(const std::string&)>& env) {
  auto expand_home = [&](std::string path) -> fs::path {
    if (path.starts_with("~")) path = env("HOME").value_or("") + path.substr(1);
    return path;
  };
  fs::path home;
  if (auto hf_home = env("HF_HOME"); hf_home && !hf_home->empty())
    home = expand_home(*hf_home);
  else if (auto xdg = env("XDG_CACHE_HOME"); xdg && !xdg->empty())
    home = expand_home(*xdg) / "huggingface";
  else
    home = expand_home("~/.cache") / "huggingface";
  fs::path file = home / "accelerate" / "default_config.yaml";
  std::error_code ec;
  if (fs::is_regular_file(file, ec)) return file;
  return std::nullopt;
}

}  // namespace lrhost::cli
