// What a training checkpoint folder is and how to judge one, without saving or restoring anything:
// the names of its parts, its step identifier, which files a complete one has, what can be seen to
// be damaged without reading its tensor data (and what reading all of it finds), and the scan of a
// checkpoints folder for the newest sound checkpoint. Used by the checkpoint manager (save, resume),
// `lrhost checkpoint info|verify` and `lrhost resume`. The layout itself: checkpoint_manager.hpp.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/io/checksum_manifest.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {

inline constexpr const char* kCheckpointsDir = "checkpoints";
inline constexpr const char* kLastLink = "last";
inline constexpr const char* kPretrainedDir = "pretrained_model";
inline constexpr const char* kTrainingStateDir = "training_state";
inline constexpr const char* kTrainConfigFile = "train_config.json";
inline constexpr const char* kChecksumsFile = "checksums.json";

// A checkpoint whose data does not match its checksums (the message names the file and byte range).
class CheckpointDamaged : public util::DataError {
  using util::DataError::DataError;
};

// Whether `path` exists; an error (no permission to look) counts as absent.
bool path_exists(const std::filesystem::path& path);

// A step folder's name: digits only (temporary folders, `last` and superseded-* are not).
bool is_step_name(const std::string& name);

// LeRobot's get_step_identifier: the step zero-padded to max(6, number of digits of total_steps).
std::string step_identifier(int64_t step, int64_t total_steps);

// The files a complete checkpoint has (its recipe snapshot included); returns the missing ones
// (empty: complete).
std::vector<std::string> missing_checkpoint_files(const std::filesystem::path& step_dir);

// An lrhost checkpoint (it has pretrained_model/train_launch.json) without its checksums.json: lrhost
// writes the manifest into every checkpoint before the folder appears, so one without it was damaged
// (the file deleted or lost) and its data cannot be trusted. The reason, naming the missing manifest;
// nullopt when the manifest is there or the checkpoint is LeRobot's (no train_launch.json: resumed
// unverified, with a warning).
std::optional<std::string> missing_lrhost_manifest(const std::filesystem::path& step_dir);

// Why a complete checkpoint cannot be resumed, from what can be seen without reading its tensor data:
// missing_lrhost_manifest, a malformed checksums.json (or per-rank manifest), a listed file that is missing or not the
// size the manifest says, or a safetensors or JSON file that is truncated or malformed (headers, sizes and JSON).
// nullopt: it looks sound. Its data is verified as resume reads it (io::VerifiedReads), or by checkpoint_data_damage.
std::optional<std::string> checkpoint_damage(const std::filesystem::path& step_dir);
// checkpoint_damage after reading every listed file against the manifests (the first mismatch,
// naming the file and byte range): what `lrhost checkpoint info` reports.
std::optional<std::string> checkpoint_data_damage(const std::filesystem::path& step_dir);
// What scan_checkpoints and resolve_checkpoint_dir call on a candidate (default: checkpoint_damage).
using DamageCheck = std::function<std::optional<std::string>(const std::filesystem::path&)>;

// Checks every file of a checkpoint against its checksums.json (and the per-rank manifests it names).
io::ManifestCheck verify_checkpoint(const std::filesystem::path& step_dir);

// The per-rank manifest of an FSDP shard file: rank_<r>.checksums.json next to rank_<r>.safetensors.
std::string shard_manifest_name(int shard_rank);

struct CheckpointScan {
  std::optional<std::filesystem::path> last_complete;                  // what resume uses
  std::vector<std::filesystem::path> complete;                         // step folders, oldest first
  std::vector<std::pair<std::filesystem::path, std::string>> damaged;  // newer than last_complete,
                                                                       // skipped with the reason (validate only)
  std::vector<std::filesystem::path> incomplete;                       // step folders missing files
  std::vector<std::filesystem::path> temporary;                        // leftovers of interrupted saves
  std::optional<std::filesystem::path> last_link;                      // where `last` points, when it exists
};
// Scans <checkpoints_dir>: `last` wins when it points at a complete checkpoint; otherwise the
// highest complete step folder (with a warning saying why). With `validate`, a candidate whose
// files are damaged (`damage`, default checkpoint_damage) is skipped for the next older one, with a
// warning.
CheckpointScan scan_checkpoints(const std::filesystem::path& checkpoints_dir, bool warn = true, bool validate = false,
                                const DamageCheck& damage = {});

// Whether `any` names one checkpoint (a step dir or its pretrained_model dir) rather than a folder of them.
bool names_one_checkpoint(const std::filesystem::path& any);
// Any of: an output dir (with checkpoints/), a checkpoints dir, a step dir, a pretrained_model dir
// -> the step dir (the last sound one for the first two). IoError explaining what was expected.
std::filesystem::path resolve_checkpoint_dir(const std::filesystem::path& any, const DamageCheck& damage = {});

// Where a resume from an older step moves the newer step folders: <checkpoints_dir>/superseded-<UTC
// time>/ (not a step name, so scans ignore it; `checkpoint info` lists it).
std::filesystem::path superseded_dir(const std::filesystem::path& checkpoints_dir);

}  // namespace lrhost::ckpt
