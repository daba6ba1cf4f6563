// A recipe's `policy.peft` table: LeRobot 0.6.1's PeftConfig (lerobot-train --peft.*) plus the two
// LoRA options PEFT has and LeRobot's command line lacks (lora_dropout, use_rslora), with LeRobot's
// and PEFT's defaults. LoRA is the only method_type lrhost implements; the others, and PEFT inits
// other than true / "gaussian" / false, are refused by name.
//
//   peft = { method_type = "",            -- "LORA" trains adapters; "" (the recipes' default): off
//            r = 16,                      -- LeRobot's default rank
//            lora_alpha = 0,              -- 0: PEFT's default, 8 (LeRobot passes None)
//            target_modules = "",         -- a regex over whole module names, or "all-linear";
//            target_module_names = {},    --   or names / name endings (PEFT's list form);
//                                         --   neither: the policy's LeRobot default targets
//            full_training_modules = {},  -- PEFT modules_to_save: trained in full
//            init_type = "",              -- "" or "true" (A kaiming-uniform, B = 0), "gaussian", "false"
//            lora_dropout = 0, use_rslora = false,
//            preset = "" }                -- "openpi": openpi's ranks, targets and fully trained modules
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/nn/lora.hpp"
#include "host/nn/lora_targets.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {

struct PeftSettings {
  nn::LoraSettings lora;
  std::optional<nn::LoraTargets> targets;  // nullopt: the policy type's LeRobot default
  std::vector<std::string> full_training_modules;
  // PEFT's rank_pattern / alpha_pattern: the first key K whose `(.*\.)?(K)` matches a module's whole
  // name gives that module its r / alpha (PEFT's get_pattern_key).
  std::vector<std::pair<std::string, int64_t>> rank_pattern;
  std::vector<std::pair<std::string, double>> alpha_pattern;
  // "openpi": the type's openpi recipe (policy_spec.hpp OpenpiLora) in place of targets, r, alpha and
  // full_training_modules; resolve_peft_preset fills them in. "": none.
  std::string preset;

  // The adapter settings of the module `name` (rank and alpha after the patterns).
  nn::LoraSettings for_module(const std::string& name) const;

  // nullopt when method_type is "" (no adapters). ConfigError / NotImplemented naming `where`.key.
  static std::optional<PeftSettings> read(const nlohmann::json& table, const std::string& where);
};

// The recipe policy table's key for these settings, and its default (every key, LoRA off), which
// lr.policy.defaults gives every policy type: like pretrained_path it is the run's, never config.json's.
inline constexpr const char* kPeftKey = "peft";
nlohmann::ordered_json default_peft_table();

// LoRA asked for a policy built new (no policy.pretrained_path): LeRobot's wrap_with_peft refuses it.
util::ConfigError lora_without_pretrained_error();

// PEFT's init_lora_weights value for an init (true, "gaussian", false), as adapter_config.json holds it.
nlohmann::json init_lora_weights_json(nn::LoraInit init);

}  // namespace lrhost::policy
