// Reading a recipe's policy.peft table; see peft_settings.hpp.
#include "host/policy/peft/peft_settings.hpp"

#include <algorithm>

#include "host/config/config_reader.hpp"
#include "host/text/unicode_regex.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {
namespace {

// PEFT 0.18's other method types (PeftType): named so that a LeRobot command line asking for one
// hears that lrhost lacks it, not that the name is unknown.
const std::vector<std::string> kOtherPeftMethods{"PROMPT_TUNING",
                                                 "MULTITASK_PROMPT_TUNING",
                                                 "P_TUNING",
                                                 "PREFIX_TUNING",
                                                 "ADALORA",
                                                 "BOFT",
                                                 "ADAPTION_PROMPT",
                                                 "IA3",
                                                 "LOHA",
                                                 "LOKR",
                                                 "OFT",
                                                 "POLY",
                                                 "LN_TUNING",
                                                 "VERA",
                                                 "FOURIERFT",
                                                 "XLORA",
                                                 "HRA",
                                                 "VBLORA",
                                                 "CPT",
                                                 "BONE",
                                                 "MISS",
                                                 "RANDLORA",
                                                 "SHIRA",
                                                 "C3A",
                                                 "ROAD",
                                                 "WAVEFT",
                                                 "DELORA",
                                                 "OSF",
                                                 "TRAINABLE_TOKENS"};

std::vector<std::string> string_list(config::ConfigReader& reader, const nlohmann::json& table, const std::string& key,
                                     const std::string& where) {
  reader.allow(key);
  std::vector<std::string> items;
  if (!table.contains(key)) return items;
  const auto& value = table.at(key);
  if (value.is_object() && value.empty()) return items;  // an empty Lua table
  if (!value.is_array())
    throw util::ConfigError(where + "." + key + ": expected a list of module names, got " + value.dump());
  for (const auto& item : value) {
    if (!item.is_string() || item.get<std::string>().empty())
      throw util::ConfigError(where + "." + key + ": expected module names (non-empty strings), got " + item.dump());
    items.push_back(item.get<std::string>());
  }
  return items;
}

nn::LoraInit read_init(const std::string& text, const std::string& where) {
  const auto value = util::lowercase(text);
  if (value.empty() || value == "true") return nn::LoraInit::kaiming_uniform;
  if (value == "gaussian") return nn::LoraInit::gaussian;
  if (value == "false") return nn::LoraInit::none;
  const std::vector<std::string> peft_only{"pissa", "olora", "loftq", "eva", "corda", "orthogonal"};
  const bool known = std::any_of(peft_only.begin(), peft_only.end(),
                                 [&](const std::string& name) { return value.rfind(name, 0) == 0; });
  if (known)
    throw util::NotImplemented(
        where + ".init_type = '" + text + "' (a PEFT initialisation) is not implemented in lrhost",
        "use \"true\" (PEFT's default), \"gaussian\" or \"false\"");
  throw util::ConfigError(where + ".init_type: expected \"true\", \"gaussian\" or \"false\", got '" + text + "'");
}

}  // namespace

std::optional<PeftSettings> PeftSettings::read(const nlohmann::json& table, const std::string& where) {
  if (!table.is_object())
    throw util::ConfigError(where + ": expected a table {method_type =, r =, ...}, got " + table.dump());
  config::ConfigReader reader(table, where);
  const auto method = reader.string("method_type", "");
  PeftSettings settings;
  settings.lora.r = reader.positive_integer("r", 16);
  const double alpha = reader.number("lora_alpha", 0);
  if (alpha < 0)
    throw util::ConfigError(where + ".lora_alpha: expected a number >= 0 (0: PEFT's default 8), got " +
                            std::to_string(alpha));
  settings.lora.alpha = alpha == 0 ? 8.0 : alpha;
  settings.lora.dropout = reader.number("lora_dropout", 0);
  if (!(settings.lora.dropout >= 0 && settings.lora.dropout < 1))
    throw util::ConfigError(where + ".lora_dropout: expected a probability in [0, 1), got " +
                            std::to_string(settings.lora.dropout));
  settings.lora.use_rslora = reader.boolean("use_rslora", false);
  settings.lora.init = read_init(reader.string("init_type", ""), where);
  settings.preset = reader.string("preset", "");
  const auto regex = reader.string("target_modules", "");
  const auto names = string_list(reader, table, "target_module_names", where);
  settings.full_training_modules = string_list(reader, table, "full_training_modules", where);
  reader.reject_unknown();

  const auto upper = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return text;
  };
  if (method.empty()) return std::nullopt;
  if (upper(method) != "LORA") {
    if (std::find(kOtherPeftMethods.begin(), kOtherPeftMethods.end(), upper(method)) != kOtherPeftMethods.end())
      throw util::NotImplemented(where + ".method_type = '" + method + "' is not implemented in lrhost (only LORA is)",
                                 "use method_type=LORA");
    throw util::ConfigError(where + ".method_type: expected \"LORA\" (or \"\" for no adapters), got '" + method + "'");
  }
  if (!settings.preset.empty()) {
    if (settings.preset != "openpi")
      throw util::ConfigError(where + ".preset: expected \"openpi\" (or \"\" for none), got '" + settings.preset + "'");
    if (!regex.empty() || !names.empty() || !settings.full_training_modules.empty() || alpha != 0 ||
        settings.lora.r != 16)
      throw util::ConfigError(where +
                              ".preset = \"openpi\" sets r, lora_alpha, the targets and "
                              "full_training_modules itself; leave them at their defaults");
    return settings;
  }
  if (!regex.empty() && !names.empty())
    throw util::ConfigError(
        where + ": give target_modules (a regex or \"all-linear\") or target_module_names (a list), not both");
  if (!regex.empty()) settings.targets = nn::LoraTargets::from_json(regex, where + ".target_modules");
  if (!names.empty()) settings.targets = nn::LoraTargets::from_json(names, where + ".target_module_names");
  return settings;
}

nn::LoraSettings PeftSettings::for_module(const std::string& name) const {
  auto settings = lora;
  const auto matches = [&](const std::string& key) { return text::PythonFullMatch("(?:.*\\.)?(?:" + key + ")")(name); };
  for (const auto& [key, r] : rank_pattern)
    if (matches(key)) {
      settings.r = r;
      break;
    }
  for (const auto& [key, alpha] : alpha_pattern)
    if (matches(key)) {
      settings.alpha = alpha;
      break;
    }
  return settings;
}

nlohmann::ordered_json default_peft_table() {
  return {{"method_type", ""},
          {"r", 16},
          {"lora_alpha", 0},
          {"target_modules", ""},
          {"target_module_names", nlohmann::ordered_json::array()},
          {"full_training_modules", nlohmann::ordered_json::array()},
          {"init_type", ""},
          {"lora_dropout", 0},
          {"use_rslora", false},
          {"preset", ""}};
}

util::ConfigError lora_without_pretrained_error() {
  return util::ConfigError(
      "policy.peft: LoRA adapters fine-tune a pretrained policy, and this one is new (no policy.pretrained_path)",
      "set policy.pretrained_path to the folder or hub id to adapt (LeRobot refuses the same: \"Training from "
      "scratch using PEFT is unlikely to yield good results\")");
}

nlohmann::json init_lora_weights_json(nn::LoraInit init) {
  switch (init) {
    case nn::LoraInit::kaiming_uniform:
      return true;
    case nn::LoraInit::gaussian:
      return "gaussian";
    case nn::LoraInit::none:
      return false;
  }
  return true;
}

}  // namespace lrhost::policy
