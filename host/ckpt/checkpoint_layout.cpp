// Checkpoint folder layout, completeness, damage and scans; see checkpoint_layout.hpp.
#include "host/ckpt/checkpoint_layout.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "host/ckpt/adapter_folder.hpp"
#include "host/ckpt/pretrained_dir.hpp"
#include "host/ckpt/recipe_snapshot.hpp"
#include "host/ckpt/sharded_state.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/io/verified_reads.hpp"
#include "host/util/timestamp.hpp"

namespace lrhost::ckpt {
namespace fs = std::filesystem;

bool path_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool is_step_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string step_identifier(int64_t step, int64_t total_steps) {
  std::size_t width = std::max<std::size_t>(6, std::to_string(std::max<int64_t>(total_steps, 0)).size());
  std::string digits = std::to_string(step);
  return digits.size() >= width ? digits : std::string(width - digits.size(), '0') + digits;
}

std::vector<std::string> missing_checkpoint_files(const fs::path& step_dir) {
  std::vector<std::string> missing;
  // A LoRA run's checkpoint holds its adapters (adapter_folder.hpp), not the base's weights.
  const bool adapters = path_exists(step_dir / kPretrainedDir / kAdapterConfigFile);
  const std::string weights = std::string(kPretrainedDir) + "/" + (adapters ? kAdapterModelFile : kModelFile);
  for (const std::string& file :
       {std::string("pretrained_model/config.json"), weights, std::string("training_state/training_step.json"),
        std::string("training_state/rng_state.safetensors")})
    if (!path_exists(step_dir / file)) missing.push_back(file);
  const fs::path shards = step_dir / kTrainingStateDir / kShardsDir;
  if (path_exists(shards))
    for (const auto& file : missing_shard_files(shards))
      missing.push_back(std::string(kTrainingStateDir) + "/" + kShardsDir + "/" + file);
  for (const auto& file : missing_snapshot_files(step_dir / kPretrainedDir))
    missing.push_back(std::string(kPretrainedDir) + "/" + file);
  return missing;
}

std::string shard_manifest_name(int shard_rank) {
  return "rank_" + std::to_string(shard_rank) + ".checksums.json";
}

io::ManifestCheck verify_checkpoint(const fs::path& step_dir) {
  return io::verify_checksum_manifest(step_dir / kChecksumsFile);
}

std::optional<std::string> missing_lrhost_manifest(const fs::path& step_dir) {
  if (path_exists(step_dir / kChecksumsFile) || !path_exists(step_dir / kPretrainedDir / kLaunchFile))
    return std::nullopt;
  return std::string("its ") + kChecksumsFile + " is missing, but it is an lrhost checkpoint (" + kPretrainedDir + "/" +
         kLaunchFile + "), which always has one: its data cannot be verified";
}

std::optional<std::string> checkpoint_damage(const fs::path& step_dir) {
  if (auto missing = missing_lrhost_manifest(step_dir)) return missing;
  // The manifests first: they name the file, where a header check would only say "malformed".
  try {
    io::VerifiedReads manifests(step_dir / kChecksumsFile);  // parses them (nested ones verified)
    if (auto resized = manifests.first_missing_or_resized()) return *resized + ", against " + kChecksumsFile;
  } catch (const std::exception& error) {
    return util::describe(error);
  }
  std::error_code ec;
  std::vector<fs::path> files;  // sorted, so the same damage is reported first every time
  for (auto it = fs::recursive_directory_iterator(step_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path());
  if (ec) return "cannot list " + step_dir.string() + ": " + ec.message();
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    try {
      if (file.extension() == ".safetensors")
        io::read_safetensors(file);  // header, dtypes, shapes and offsets against the file's size
      else if (file.extension() == ".json")
        io::read_json_file(file, "");
    } catch (const std::exception& error) {
      return util::describe(error);
    }
  }
  return std::nullopt;
}

std::optional<std::string> checkpoint_data_damage(const fs::path& step_dir) {
  auto check = verify_checkpoint(step_dir);
  if (!check.mismatches.empty()) {
    std::string text = io::describe(check.mismatches.front()) + ", against " + kChecksumsFile;
    if (check.mismatches.size() > 1) text += " and " + std::to_string(check.mismatches.size() - 1) + " more";
    return text;
  }
  return checkpoint_damage(step_dir);
}

CheckpointScan scan_checkpoints(const fs::path& checkpoints_dir, bool warn, bool validate,
                                const DamageCheck& damage_check) {
  CheckpointScan scan;
  std::error_code ec;
  std::vector<std::pair<int64_t, fs::path>> steps;
  for (auto it = fs::directory_iterator(checkpoints_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(io::kTempPrefix, 0) == 0) {
      scan.temporary.push_back(it->path());
    } else if (is_step_name(name) && it->is_directory(ec) && name.size() < 19) {
      steps.emplace_back(std::stoll(name), it->path());
    }
  }
  std::sort(steps.begin(), steps.end());
  for (const auto& [step, path] : steps)
    (missing_checkpoint_files(path).empty() ? scan.complete : scan.incomplete).push_back(path);
  const fs::path link = checkpoints_dir / kLastLink;
  if (fs::is_symlink(fs::symlink_status(link, ec))) {
    fs::path target = fs::read_symlink(link, ec);
    scan.last_link = target.is_absolute() ? target : checkpoints_dir / target;
  }
  // Newest first: `last` when it points at a complete checkpoint, then the step folders.
  std::vector<fs::path> candidates;
  const bool last_usable =
      scan.last_link && path_exists(*scan.last_link) && missing_checkpoint_files(*scan.last_link).empty();
  if (last_usable) candidates.push_back(*scan.last_link);
  for (auto it = scan.complete.rbegin(); it != scan.complete.rend(); ++it)
    if (!last_usable || !fs::equivalent(*it, *scan.last_link, ec)) candidates.push_back(*it);
  for (const auto& candidate : candidates) {
    auto damage = !validate ? std::nullopt : damage_check ? damage_check(candidate) : checkpoint_damage(candidate);
    if (!damage) {
      scan.last_complete = candidate;
      break;
    }
    scan.damaged.emplace_back(candidate, *damage);
  }
  if (warn && scan.last_complete && !(last_usable && scan.last_complete == scan.last_link))
    spdlog::warn("checkpoints: {}; using the newest sound checkpoint {}",
                 !scan.damaged.empty()
                     ? scan.damaged.front().first.string() + " is damaged (" + scan.damaged.front().second + ")"
                 : scan.last_link ? "'last' points to " + scan.last_link->string() + ", which is missing or incomplete"
                                  : std::string("no 'last' link"),
                 scan.last_complete->string());
  if (warn)
    for (std::size_t i = 1; i < scan.damaged.size(); ++i)
      spdlog::warn("checkpoints: {} is damaged too ({})", scan.damaged[i].first.string(), scan.damaged[i].second);
  if (warn) {
    for (const auto& path : scan.incomplete)
      spdlog::warn("checkpoints: {} is incomplete (missing {}); it is ignored", path.string(),
                   missing_checkpoint_files(path).front());
    for (const auto& path : scan.temporary)
      spdlog::warn("checkpoints: {} is the leftover of an interrupted save; it is ignored", path.string());
  }
  return scan;
}

fs::path superseded_dir(const fs::path& checkpoints_dir) {
  const std::string name = "superseded-" + util::utc_timestamp();
  fs::path dir = checkpoints_dir / name;
  for (int n = 2; path_exists(dir); ++n) dir = checkpoints_dir / (name + "-" + std::to_string(n));
  return dir;
}

bool names_one_checkpoint(const fs::path& any) {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(any, ec);
  if (ec) dir = any;
  return (path_exists(dir / kConfigFile) && dir.filename() == kPretrainedDir) || path_exists(dir / kPretrainedDir) ||
         path_exists(dir / kTrainingStateDir);
}

fs::path resolve_checkpoint_dir(const fs::path& any, const DamageCheck& damage_check) {
  std::error_code ec;
  if (!fs::is_directory(any, ec)) throw util::IoError(any.string() + ": no such folder");
  fs::path dir = fs::weakly_canonical(any, ec);
  if (ec) dir = any;
  if (path_exists(dir / kConfigFile) && dir.filename() == kPretrainedDir) return dir.parent_path();
  if (path_exists(dir / kPretrainedDir) || path_exists(dir / kTrainingStateDir)) return dir;
  fs::path checkpoints = path_exists(dir / kCheckpointsDir) ? dir / kCheckpointsDir : dir;
  auto scan = scan_checkpoints(checkpoints, false, true, damage_check);
  for (const auto& [path, damage] : scan.damaged)
    spdlog::warn("checkpoints: {} is damaged ({}); skipped", path.string(), damage);
  if (scan.last_complete) {
    if (!scan.damaged.empty())
      spdlog::warn("checkpoints: using the newest sound checkpoint {}", scan.last_complete->string());
    return *scan.last_complete;
  }
  if (!scan.damaged.empty())
    throw util::DataError(any.string() + ": every complete checkpoint is damaged (newest: " +
                          scan.damaged.front().first.string() + ": " + scan.damaged.front().second + ")");
  if (!scan.incomplete.empty() || !scan.temporary.empty())
    throw util::DataError(any.string() + ": holds no complete checkpoint (only incomplete ones)",
                          "a save was interrupted before any checkpoint completed");
  throw util::IoError(any.string() + " is not a checkpoint folder",
                      "give an output dir (with checkpoints/), a checkpoints dir, a step dir (e.g. "
                      "checkpoints/000100) or its pretrained_model dir");
}

}  // namespace lrhost::ckpt
