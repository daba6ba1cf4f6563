// Folder-or-hub-id resolution through the local Hugging Face cache; see hf_cache.hpp.
#include "host/io/hf_cache.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "host/io/atomic_dir.hpp"
#include "host/util/crc32c.hpp"
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

// models--org--name: the hub cache's folder of a model id.
fs::path repo_cache_dir(const std::string& repo_id) {
  std::string folder_name = "models--" + repo_id;
  for (std::size_t at = folder_name.find('/'); at != std::string::npos; at = folder_name.find('/', at))
    folder_name.replace(at, 1, "--");
  return hf_hub_cache_dir() / folder_name;
}

// The regular files of `folder` (not below), by name.
std::vector<fs::path> files_of(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// 40 hex digits (the length of a hub commit id) from five CRC32Cs of every file's name and content,
// each pass seeded differently: equal for the same files, different when any byte differs.
std::string content_revision(const std::vector<fs::path>& files) {
  std::string all;
  for (const auto& file : files) {
    const std::string text = read_text_file(file);
    all += file.filename().string() + '\0' + std::to_string(text.size()) + '\0' + text;
  }
  std::string revision;
  for (uint32_t pass = 0; pass < 5; ++pass) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x",
                  util::crc32c_extend(util::crc32c(std::to_string(pass)), all.data(), all.size()));
    revision += hex;
  }
  return revision;
}

// `file` replaced by a rename of a file only this process writes, so concurrent writers never clash.
void write_file_renamed(const fs::path& file, const std::string& text) {
  const fs::path temporary = file.string() + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw util::IoError("cannot write " + temporary.string());
  }
  std::error_code ec;
  fs::rename(temporary, file, ec);
  if (ec) throw util::IoError("cannot rename " + temporary.string() + " to " + file.string() + ": " + ec.message());
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
  fs::path repo = repo_cache_dir(path_or_id);
  // "lrhost/<name>": lrhost's own asset, put into the cache (current files) before it is looked up.
  if (auto asset = util::shipped_asset_dir(path_or_id); !asset.empty() && fs::is_directory(asset, error)) {
    try {
      install_into_hub_cache(asset, path_or_id);
    } catch (const std::exception& failure) {
      spdlog::warn(
          "{} = '{}': the shipped asset could not be put into the Hugging Face cache ({}), so LeRobot "
          "cannot resolve that id on this machine; lrhost uses {}",
          what, path_or_id, util::describe(failure), asset.string());
    }
    return asset;
  }
  // A revision names a ref (refs/<revision> holds the commit) or is the commit itself.
  std::string commit = revision;
  if (fs::is_regular_file(repo / "refs" / revision, error)) commit = read_first_line(repo / "refs" / revision);
  fs::path snapshot = repo / "snapshots" / commit;
  if (!commit.empty() && fs::is_directory(snapshot, error)) return snapshot;
  throw util::ConfigError(
      what + " = '" + path_or_id + "' is not a folder and not in the local Hugging Face cache: searched " +
          (fs::path(path_or_id)).string() + " and " + (repo / "snapshots").string() + " (revision '" + revision +
          "'; cache from $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub). lrhost never downloads",
      "fetch it once on a machine with network access: hf download " + path_or_id +
          (revision == "main" ? "" : " --revision " + revision) + " (then copy " + repo.string() + ")");
}

fs::path install_into_hub_cache(const fs::path& folder, const std::string& repo_id) {
  const fs::path repo = repo_cache_dir(repo_id);
  const auto files = files_of(folder);
  const std::string revision = content_revision(files);
  const fs::path snapshot = repo / "snapshots" / revision;
  std::error_code ec;
  if (fs::is_directory(snapshot, ec) && fs::is_regular_file(repo / "refs" / "main", ec) &&
      read_first_line(repo / "refs" / "main") == revision)
    return snapshot;
  fs::create_directories(repo / "refs", ec);
  fs::create_directories(repo / "snapshots", ec);
  if (ec) throw util::IoError("cannot create " + repo.string() + ": " + ec.message());
  if (!fs::is_directory(snapshot, ec)) {
    const fs::path assembling = repo / "snapshots" / (".tmp-" + revision + "-" + std::to_string(::getpid()));
    remove_tree(assembling);
    fs::create_directories(assembling, ec);
    if (ec) throw util::IoError("cannot create " + assembling.string() + ": " + ec.message());
    for (const auto& file : files) {  // small text files (config, tokenizer)
      std::ofstream out(assembling / file.filename(), std::ios::binary);
      out << read_text_file(file);
      if (!out.flush()) throw util::IoError("cannot copy " + file.string() + " into " + assembling.string());
    }
    fs::rename(assembling, snapshot, ec);
    // Another process renamed the same files into place first: its copy is as good.
    if (ec) remove_tree(assembling);
    if (!fs::is_directory(snapshot)) throw util::IoError("cannot create " + snapshot.string());
  }
  write_file_renamed(repo / "refs" / "main", revision);
  spdlog::info("installed {} into the Hugging Face cache ({}), so LeRobot resolves it offline", repo_id,
               snapshot.string());
  return snapshot;
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
