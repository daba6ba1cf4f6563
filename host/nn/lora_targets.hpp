// Which modules of a model get LoRA adapters and which train in full, as PEFT 0.18 chooses them
// (peft/tuners/tuners_utils.py: check_target_module_exists, _maybe_include_all_linear_layers;
// peft/utils/other.py: _set_trainable), over the model's named modules in their order:
//  - target_modules: a string is a regex that must match a whole module name (re.fullmatch); a list
//    matches a name equal to an entry or ending in "." + entry; "all-linear" (any case) is every
//    Linear (PEFT excludes an output head only for transformers' PreTrainedModel, which a LeRobot
//    policy is not, so none is excluded here either);
//  - modules_to_save (LeRobot's full_training_modules): a module whose name ends with an entry trains
//    in full; no adapter goes into it (PEFT's (^|.*\.)entry($|\..*) exclusion).
// Stricter than PEFT where PEFT is silent: a modules_to_save entry that matches nothing and a module
// both adapted and trained in full are errors, as is a target that matches nothing (as in PEFT) or a
// module that is not a Linear (PEFT: "Target module ... is not supported").
#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lrhost::nn {

struct LoraTargets {
  enum class Kind { regex, names, all_linear };
  Kind kind = Kind::names;
  std::string regex;               // Kind::regex
  std::vector<std::string> names;  // Kind::names

  // A string or a list of strings (`where` names the key in errors).
  static LoraTargets from_json(const nlohmann::json& value, const std::string& where);
  // As adapter_config.json holds it: the regex string, the list, or "all-linear".
  nlohmann::json to_json() const;
};

struct LoraSelection {
  std::vector<std::string> adapted;        // Linear modules that get an adapter, in module order
  std::vector<std::string> trained_fully;  // modules_to_save matches, in module order
};

// A module as the selection sees it: its path, whether it is a Linear, its type (named in errors).
struct LoraCandidate {
  std::string name;
  bool linear = false;
  std::string type;
};

// ConfigError naming `where` for a bad regex, an empty selection (with near module names), a
// selected module that is not a Linear, an unmatched modules_to_save entry or an overlap.
LoraSelection select_lora_modules(const torch::nn::Module& root, const LoraTargets& targets,
                                  const std::vector<std::string>& modules_to_save, const std::string& where);
// The same over modules listed in module order (a policy planned without building it).
LoraSelection select_lora_modules(const std::vector<LoraCandidate>& modules, const LoraTargets& targets,
                                  const std::vector<std::string>& modules_to_save, const std::string& where);

}  // namespace lrhost::nn
