// LeRobot's pretrained policy folder as a policy config sees it (PreTrainedPolicy.save_pretrained's
// file names, config.json, and the files a policy type writes beside it): where a folder or hub id
// lives, and the config it holds. Reading it is a policy matter (the policy type says which of its
// files config.json cannot hold), so it lives here, below host/ckpt, which writes and loads the whole
// folder (host/ckpt/pretrained_dir.hpp).
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>

namespace lrhost::policy {

inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kModelFile = "model.safetensors";

// A pretrained folder, or the cached snapshot of a hub id ("lerobot/smolvla_base", looked up in the
// local Hugging Face cache, never downloaded); IoError when neither exists.
std::filesystem::path resolve_pretrained_dir(const std::filesystem::path& path_or_id);

// config.json of `dir` as an ordered object (DataError naming the file when unreadable or invalid).
nlohmann::ordered_json read_config_json(const std::filesystem::path& dir);

// The policy config the folder holds: config.json plus what the type's extra files add (its spec's
// read_pretrained_extras, the reading twin of Policy::pretrained_extra_files).
nlohmann::ordered_json read_policy_config(const std::filesystem::path& dir);

}  // namespace lrhost::policy
