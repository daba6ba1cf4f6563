// rename_map's key check and suggestions; see rename_map.hpp.
#include "host/policy/rename_map.hpp"

#include <nlohmann/json.hpp>

#include <vector>

#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {
namespace {

// As typed on the command line: a JSON object ({"a": "b", "c": "d"}, as LeRobot's examples write
// it), single-quoted for the shell.
std::string command_line_text(const RenameMap& renames) {
  std::string object;
  for (const auto& [from, to] : renames)
    object += (object.empty() ? "" : ", ") + nlohmann::json(from).dump() + ": " + nlohmann::json(to).dump();
  object = "{" + object + "}";
  return "rename_map='" + object + "' (lerobot-train: --rename_map='" + object + "')";
}

}  // namespace

void check_rename_map_keys(const RenameMap& renames, const Batch& batch) {
  for (const auto& [from, to] : renames) {
    if (batch.count(from)) continue;
    std::vector<std::string> keys;
    for (const auto& [key, tensor] : batch) keys.push_back(key);
    std::string hint = "rename_map maps a dataset key onto the policy's key: {\"dataset key\": \"policy key\"}";
    if (batch.count(to)) {
      RenameMap reversed = renames;
      reversed.erase(from);
      reversed[to] = from;
      hint = "'" + to + "' is in the batch: the entry looks reversed (rename_map maps dataset key -> policy key); " +
             "did you mean " + command_line_text(reversed) + "?";
    }
    throw util::ConfigError("rename_map: key '" + from + "' (-> '" + to +
                                "') matches no key of the batch, whose keys are " + util::quoted_list(keys),
                            hint);
  }
}

std::string suggested_rename_map(const RenameMap& renames, const std::string& batch_key,
                                 const std::string& policy_key) {
  RenameMap suggested = renames;
  std::string dataset_key = batch_key;
  for (const auto& [from, to] : renames)
    if (to == batch_key) dataset_key = from;  // the user's rename produced it: map the dataset key instead
  suggested.erase(dataset_key);
  suggested[dataset_key] = policy_key;
  return command_line_text(suggested);
}

}  // namespace lrhost::policy
