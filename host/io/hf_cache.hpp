// Local model folders named the way Hugging Face users name them: a folder path, or a hub id
// ("lerobot/smolvla_base") resolved through the local Hugging Face cache exactly as huggingface_hub
// lays it out — $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub; inside it
// models--<org>--<name>/refs/<revision> holds the commit whose files are in snapshots/<commit>/.
// Nothing is ever downloaded: a hub id missing from the cache is an error that names the id, the
// folders searched and the `hf download` command that fetches it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lrhost::io {

// The cache folders searched, in order (the first that the environment names).
std::filesystem::path hf_hub_cache_dir();

// True for "org/name" and "name" ids as the hub accepts them (letters, digits, '-', '_', '.'; no
// leading or trailing separator, no "..").
bool looks_like_hub_id(const std::string& text);

// `path_or_id` as an existing folder, else the snapshot folder of the hub id at `revision` (a branch
// or tag name with a refs/ file, or a commit hash with a snapshot), else, for "lrhost/<name>", the
// asset shipped with lrhost (util/shipped_paths.hpp). Throws util::ConfigError naming
// `what` (e.g. "policy.pretrained_path") when neither exists.
std::filesystem::path resolve_model_dir(const std::string& path_or_id, const std::string& what,
                                        const std::string& revision = "main");

// The folders where LeRobot keeps datasets by repo id, in the order searched: $HF_LEROBOT_HOME,
// $HF_HOME/lerobot, $XDG_CACHE_HOME/huggingface/lerobot, ~/.cache/huggingface/lerobot (each one the
// environment names; LeRobot itself reads the first of them).
std::vector<std::filesystem::path> lerobot_dataset_homes();

// The local folder of LeRobot dataset `repo_id` ("user/name"): <home>/<repo_id> in the first home
// that has it. Throws util::ConfigError naming `what` (e.g. "dataset.repo_id"), the folders searched
// and the `hf download` command that fetches it; a malformed id is an error too.
std::filesystem::path resolve_lerobot_dataset(const std::string& repo_id, const std::string& what);

}  // namespace lrhost::io
