// rename_map (dataset key -> policy key, LeRobot's --rename_map and rename_observations_processor):
// the check that every key it renames is in the batch, and the rename_map a policy suggests when the
// batch has a camera it does not know. A rename that matches nothing would otherwise leave the batch
// as it was without a word (the policy then trains without that input, or on an empty camera).
// Suggestions are written as the command line takes them (JSON), for both `lrhost RECIPE
// rename_map=...` and `lrhost lerobot-train --rename_map=...`, and always map the dataset's key: a
// key the user's own rename_map produced is traced back to the dataset key it came from.
#pragma once
#include <map>
#include <string>

#include "host/policy/policy.hpp"

namespace lrhost::policy {

using RenameMap = std::map<std::string, std::string>;

// util::ConfigError naming the first rename_map key that is not in `batch`, with the batch's keys
// (and the reversed entry when the user mapped policy key -> dataset key).
void check_rename_map_keys(const RenameMap& renames, const Batch& batch);

// `renames` with the dataset key behind `batch_key` mapped onto `policy_key` (the user's other
// entries kept), as the text to type: rename_map='{"a": "b"}' (lerobot-train: --rename_map='{...}').
std::string suggested_rename_map(const RenameMap& renames, const std::string& batch_key, const std::string& policy_key);

}  // namespace lrhost::policy
