// Folder-or-hub-id resolution through the local Hugging Face cache; see hf_cache.hpp.
#include "host/io/hf_cache.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "host/util/error.hpp"
#include "host/util/shipped_paths.hpp"

namespace lrhost::io {
namespace fs = std::filesystem;

namespace {
std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

bool valid_id_part(const std::string& part) {
  if (part.empty() || part.size() > 96 || part.find("..") != std::string::npos) return false;
  for (char c : part)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  auto separator = [](char c) { return c == '-' || c == '.'; };
  return !separator(part.front()) && !separator(part.back());
}

std::string read_first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}
}  // namespace

fs::path hf_hub_cache_dir() {
  if (auto cache = env_or_empty("HF_HUB_CACHE"); !cache.empty()) return cache;
  if (auto legacy = env_or_empty("HUGGINGFACE_HUB_CACHE"); !legacy.empty()) return legacy;
  if (auto home = env_or_empty("HF_HOME"); !home.empty()) return fs::path(home) / "hub";
  auto xdg = env_or_empty("XDG_CACHE_HOME");
  fs::path cache_root = !xdg.empty() ? fs::path(xdg) : fs::path(env_or_empty("HOME")) / ".cache";
  return cache_root / "huggingface" / "hub";
}

bool looks_like_hub_id(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos) return valid_id_part(text);
  if (text.find('/', slash + 1) != std::string::npos) return false;
  return valid_id_part(text.substr(0, slash)) && valid_id_part(text.substr(slash + 1));
}

fs::path resolve_model_dir(const std::string& path_or_id, const std::string& what, const std::string& revision) {
  std::error_code error;
  if (fs::is_directory(path_or_id, error)) return path_or_id;
  if (!looks_like_hub_id(path_or_id))
    throw util::ConfigError(what + " = '" + path_or_id + "': no such folder, and not a Hugging Face hub id (org/name)");
  fs::path cache = hf_hub_cache_dir();
  std::string folder_name = "models--" + path_or_id;
  for (std::size_t at = folder_name.find('/'); at != std::string::npos; at = folder_name.find('/', at))
    folder_name.replace(at, 1, "--");
  fs::path repo = cache / folder_name;
  // A revision names a ref (refs/<revision> holds the commit) or is the commit itself.
  std::string commit = revision;
  if (fs::is_regular_file(repo / "refs" / revision, error)) commit = read_first_line(repo / "refs" / revision);
  fs::path snapshot = repo / "snapshots" / commit;
  if (!commit.empty() && fs::is_directory(snapshot, error)) return snapshot;
  // Not in the cache: "lrhost/<name>" may be an asset shipped with lrhost.
  if (auto asset = util::shipped_asset_dir(path_or_id); !asset.empty() && fs::is_directory(asset, error))
    return asset;
  throw util::ConfigError(
      what + " = '" + path_or_id + "' is not a folder and not in the local Hugging Face cache: searched " +
          (fs::path(path_or_id)).string() + " and " + (repo / "snapshots").string() + " (revision '" + revision +
          "'; cache from $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub). lrhost never downloads",
      "fetch it once on a machine with network access: hf download " + path_or_id +
          (revision == "main" ? "" : " --revision " + revision) + " (then copy " + repo.string() + ")");
}

std::vector<fs::path> lerobot_dataset_homes() {
  std::vector<fs::path> homes;
  auto add = [&](const fs::path& home) {
    if (std::find(homes.begin(), homes.end(), home) == homes.end()) homes.push_back(home);
  };
  if (auto home = env_or_empty("HF_LEROBOT_HOME"); !home.empty()) add(home);
  if (auto home = env_or_empty("HF_HOME"); !home.empty()) add(fs::path(home) / "lerobot");
  if (auto xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty()) add(fs::path(xdg) / "huggingface" / "lerobot");
  if (auto user = env_or_empty("HOME"); !user.empty()) add(fs::path(user) / ".cache" / "huggingface" / "lerobot");
  return homes;
}

fs::path resolve_lerobot_dataset(const std::string& repo_id, const std::string& what) {
  if (!looks_like_hub_id(repo_id) || repo_id.find('/') == std::string::npos)
    throw util::ConfigError(what + " = '" + repo_id + "' is not a dataset repo id",
                            "a repo id looks like user/name (LeRobot's --dataset.repo_id); a local folder goes in "
                            "dataset.root");
  std::string searched;
  std::error_code ec;
  for (const auto& home : lerobot_dataset_homes()) {
    fs::path dir = home / repo_id;
    if (fs::is_directory(dir, ec)) return dir;
    searched += (searched.empty() ? "" : ", ") + dir.string();
  }
  throw util::ConfigError(
      what + " = '" + repo_id + "': the dataset is not on this machine (searched " + searched +
          "; lrhost never downloads)",
      "fetch it once on a machine with network access: hf download " + repo_id + " --repo-type dataset --local-dir " +
          (lerobot_dataset_homes().empty() ? fs::path(repo_id) : lerobot_dataset_homes().front() / repo_id).string() +
          " (or give its folder as dataset.root=PATH)");
}

}  // namespace lrhost::io
