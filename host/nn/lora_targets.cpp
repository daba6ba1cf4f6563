// PEFT's choice of adapted and fully trained modules; see lora_targets.hpp.
#include "host/nn/lora_targets.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "host/text/unicode_regex.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::nn {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::unique_ptr<text::PythonFullMatch> compile(const std::string& pattern, const std::string& where) {
  try {
    return std::make_unique<text::PythonFullMatch>(pattern);
  } catch (const std::invalid_argument& e) {
    throw util::ConfigError(where + ": '" + pattern + "' is not a valid regular expression: " + e.what());
  }
}

bool is_linear(const torch::nn::Module& module) {
  return dynamic_cast<const torch::nn::LinearImpl*>(&module) != nullptr;
}

}  // namespace

LoraTargets LoraTargets::from_json(const nlohmann::json& value, const std::string& where) {
  LoraTargets targets;
  if (value.is_string()) {
    const auto text = value.get<std::string>();
    if (util::lowercase(text) == "all-linear") {
      targets.kind = Kind::all_linear;
    } else {
      targets.kind = Kind::regex;
      targets.regex = text;
      compile(text, where);
    }
    return targets;
  }
  if (value.is_array() && !value.empty()) {
    for (const auto& item : value) {
      if (!item.is_string()) throw util::ConfigError(where + ": expected module names (strings), got " + item.dump());
      targets.names.push_back(item.get<std::string>());
    }
    return targets;
  }
  throw util::ConfigError(where +
                          ": expected a module name regex, a non-empty list of module names or \"all-linear\", got " +
                          value.dump());
}

nlohmann::json LoraTargets::to_json() const {
  switch (kind) {
    case Kind::regex:
      return regex;
    case Kind::names:
      return names;
    case Kind::all_linear:
      return "all-linear";
  }
  return nullptr;
}

LoraSelection select_lora_modules(const torch::nn::Module& root, const LoraTargets& targets,
                                  const std::vector<std::string>& modules_to_save, const std::string& where) {
  std::vector<LoraCandidate> modules;
  for (const auto& item : root.named_modules("", /*include_self=*/false))
    modules.push_back({item.key(), is_linear(*item.value()), item.value()->name()});
  return select_lora_modules(modules, targets, modules_to_save, where);
}

LoraSelection select_lora_modules(const std::vector<LoraCandidate>& modules, const LoraTargets& targets,
                                  const std::vector<std::string>& modules_to_save, const std::string& where) {
  std::vector<std::unique_ptr<text::PythonFullMatch>> save_exclusions;
  for (const auto& m : modules_to_save) save_exclusions.push_back(compile("(?:^|.*\\.)" + m + "(?:$|\\..*)", where));
  std::unique_ptr<text::PythonFullMatch> regex;
  if (targets.kind == LoraTargets::Kind::regex) regex = compile(targets.regex, where);

  LoraSelection selection;
  std::vector<std::string> linear_names;
  std::vector<bool> save_entry_used(modules_to_save.size(), false);
  for (const auto& module : modules) {
    const auto& key = module.name;
    if (module.linear) linear_names.push_back(key);
    for (size_t i = 0; i < modules_to_save.size(); ++i)
      if (ends_with(key, modules_to_save[i])) {
        save_entry_used[i] = true;
        const bool inside_saved = std::any_of(selection.trained_fully.begin(), selection.trained_fully.end(),
                                              [&](const std::string& outer) { return key.rfind(outer + ".", 0) == 0; });
        if (!inside_saved) selection.trained_fully.push_back(key);
        break;
      }
    const bool excluded = std::any_of(save_exclusions.begin(), save_exclusions.end(),
                                      [&](const auto& exclusion) { return (*exclusion)(key); });
    if (excluded) continue;
    bool selected = false;
    switch (targets.kind) {
      case LoraTargets::Kind::regex:
        selected = (*regex)(key);
        break;
      case LoraTargets::Kind::names:
        selected = std::any_of(targets.names.begin(), targets.names.end(),
                               [&](const std::string& name) { return key == name || ends_with(key, "." + name); });
        break;
      case LoraTargets::Kind::all_linear:
        selected = module.linear;
        break;
    }
    if (!selected) continue;
    if (!module.linear)
      throw util::ConfigError(where + ": '" + key + "' (a " + module.type +
                              ") matches the LoRA targets, but only Linear layers take LoRA adapters");
    selection.adapted.push_back(key);
  }
  for (size_t i = 0; i < modules_to_save.size(); ++i)
    if (!save_entry_used[i])
      throw util::ConfigError(where + ": full_training_modules entry '" + modules_to_save[i] +
                              "' matches no module (a module name must end with it)");
  for (const auto& adapted : selection.adapted)
    for (const auto& full : selection.trained_fully)
      if (adapted == full || adapted.rfind(full + ".", 0) == 0)
        throw util::ConfigError(where + ": '" + adapted + "' is both a LoRA target and trained in full (" + full +
                                "); take it out of one of target_modules and full_training_modules");
  if (selection.adapted.empty()) {
    std::string probe = targets.kind == LoraTargets::Kind::regex ? targets.regex
                        : targets.names.empty()                  ? std::string()
                                                                 : targets.names.front();
    auto near = util::nearest(probe, linear_names, 5);
    if (near.empty())
      near.assign(linear_names.begin(), linear_names.begin() + std::min<std::ptrdiff_t>(5, linear_names.size()));
    throw util::ConfigError(where + ": target_modules " + targets.to_json().dump() +
                                " match no module of the policy; Linear modules are named like " +
                                util::quoted_list(near),
                            "a string is a regex over the whole module name, a list entry matches a name's end");
  }
  return selection;
}

}  // namespace lrhost::nn
