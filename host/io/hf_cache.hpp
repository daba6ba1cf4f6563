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
// asset shipped with lrhost (util/shipped_paths.hpp), which is then installed into the hub cache
// (install_into_hub_cache; a warning when the cache cannot be written) so that LeRobot, reading a
// config lrhost wrote that names it, resolves the same id offline. Throws util::ConfigError naming
// `what` (e.g. "policy.pretrained_path") when neither exists.
std::filesystem::path resolve_model_dir(const std::string& path_or_id, const std::string& what,
                                        const std::string& revision = "main");

// Puts the files of `folder` into the local hub cache as model `repo_id` ("lrhost/smolvla_tiny_vlm")
// at refs/main, the way `hf download` leaves a model: models--<org>--<name>/snapshots/<revision>/
// with <revision> a 40-hex digest of the files' names and contents, and refs/main naming it. Nothing
// is written when refs/main already names the same files. The snapshot is assembled beside and
// renamed into place, and refs/main replaced by a rename, so ranks installing at once and readers
// (LeRobot) never see half a copy. Returns the snapshot folder; IoError naming the cache when it
// cannot be written.
std::filesystem::path install_into_hub_cache(const std::filesystem::path& folder, const std::string& repo_id);

// The folders where LeRobot keeps datasets by repo id, in the order searched: $HF_LEROBOT_HOME,
// $HF_HOME/lerobot, $XDG_CACHE_HOME/huggingface/lerobot, ~/.cache/huggingface/lerobot (each one the
// environment names; LeRobot itself reads the first of them).
std::vector<std::filesystem::path> lerobot_dataset_homes();

// The local folder of LeRobot dataset `repo_id` ("user/name"): <home>/<repo_id> in the first home
// that has it. Throws util::ConfigError naming `what` (e.g. "dataset.repo_id"), the folders searched
// and the `hf download` command that fetches it; a malformed id is an error too.
std::filesystem::path resolve_lerobot_dataset(const std::string& repo_id, const std::string& what);

}  // namespace lrhost::io
