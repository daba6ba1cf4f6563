// What a recipe's `dataset.mixture` says: the datasets of a mixture (a folder or a LeRobot repo id in
// the local cache, a weight, a rename map onto the policy's keys, episodes, a name), how their
// weights are read (`dataset.weighting`) and which normalization stats the policy gets
// (`dataset.stats`). It may be given as a list of tables, as the same list in JSON text (the command
// line), or as "@path.json" (a shared mixture file). Every bad entry is a ConfigError naming the
// entry and the key. Semantics: docs/datasets.md#mixtures.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::data {

struct MixturePart {
  std::string name;                               // metric and stats name: the repo id's last part or the folder's name
  std::string source;                             // as given: the repo id or the root (for messages)
  std::filesystem::path root;                     // resolved folder
  std::optional<double> weight;                   // relative sampling probability (> 0)
  std::map<std::string, std::string> rename_map;  // dataset key -> policy key
  std::optional<std::vector<int64_t>> episodes;   // all when unset
};

// frames: each dataset's frame share (LeRobot's concatenation, what merging gives); given: the
// weights; balanced: weight x frames (Octo's balance_weights).
enum class MixtureWeighting { frames, given, balanced };
// pooled: LeRobot's aggregate_stats over the datasets (what merging them gives); per_dataset: each
// sample normalized by its own dataset's stats (Octo's).
enum class MixtureStats { pooled, per_dataset };

struct MixtureSpec {
  std::vector<MixturePart> parts;
  MixtureWeighting weighting = MixtureWeighting::frames;
  MixtureStats stats = MixtureStats::pooled;
  bool mixed_fps = false;  // allow datasets of different fps (windows are in seconds; each must serve them)
};

std::string weighting_name(MixtureWeighting weighting);

// `mixture`: a JSON list of entries, a string holding one ("[{...}]"), or "@file.json". `weighting`:
// "" (the default: "given" when any weight is set, "frames" otherwise), "frames", "given" or
// "balanced". `stats`: "pooled" or "per_dataset". `base_dir` resolves relative roots and @files.
MixtureSpec mixture_spec_from_json(const nlohmann::json& mixture, const std::string& weighting,
                                   const std::string& stats, bool mixed_fps,
                                   const std::filesystem::path& base_dir = std::filesystem::current_path());

// The mixture a recipe's dataset table names (policy_training.lua's dataset.mixture, weighting, stats,
// mixed_fps), for the commands that read a run's config; nullopt when it names none.
std::optional<MixtureSpec> recipe_mixture_spec(const nlohmann::json& dataset);

}  // namespace lrhost::data
