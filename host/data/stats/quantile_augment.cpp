// `lrhost dataset stats`: per-episode recomputation and the in-place rewrite of meta/stats.json; see
// quantile_augment.hpp. Matched: LeRobot 0.6.1 scripts/augment_dataset_quantile_stats.py
// (has_quantile_stats, process_single_episode, compute_quantile_stats_for_dataset).
#include "host/data/stats/quantile_augment.hpp"

#include <algorithm>
#include <map>

#include "host/data/lerobot_dataset.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace fs = std::filesystem;

namespace {

// The stat names of LeRobot's default quantiles ("q01" ... "q99").
std::vector<std::string> default_quantile_names() {
  std::vector<std::string> names;
  for (double q : default_quantiles()) names.push_back(quantile_name(q));
  return names;
}

// [first, last) rows of each episode in the dataset's loaded episode_index column, in one pass.
// LeRobot stores an episode's frames contiguously; an episode found in two runs is an error rather
// than half its frames.
std::map<int64_t, std::pair<int64_t, int64_t>> episode_row_ranges(const torch::Tensor& episode_column,
                                                                  const fs::path& root) {
  std::map<int64_t, std::pair<int64_t, int64_t>> ranges;
  const int64_t* p = episode_column.data_ptr<int64_t>();
  for (int64_t row = 0, n = episode_column.numel(); row < n;) {
    int64_t end = row;
    while (end < n && p[end] == p[row]) ++end;
    if (!ranges.emplace(p[row], std::make_pair(row, end)).second)
      throw util::DataError("dataset " + root.string() + ": the frames of episode " + std::to_string(p[row]) +
                            " are not contiguous (rows " + std::to_string(ranges[p[row]].first) + " and " +
                            std::to_string(row) + ")");
    row = end;
  }
  return ranges;
}

}  // namespace

bool has_quantile_stats(const DatasetStats& stats) {
  const auto names = default_quantile_names();
  for (const auto& [key, feature] : stats)
    for (const auto& name : names)
      if (feature.has(name)) return true;
  return false;
}

DatasetStats compute_dataset_quantile_stats(const fs::path& root,
                                            const std::function<void(int64_t, int64_t)>& progress) {
  LeRobotDataset dataset(root);
  const DatasetMeta& meta = dataset.meta();
  const torch::Tensor episode_column = dataset.column("episode_index").to(torch::kInt64).contiguous();
  std::vector<const FeatureSpec*> numeric, cameras;
  for (const FeatureSpec& feature : meta.info.features) {
    if (feature.kind == FeatureKind::Numeric) numeric.push_back(&feature);
    if (feature.is_camera()) cameras.push_back(&feature);
  }
  std::map<std::string, std::vector<FeatureStats>> per_feature;
  ReadContext context;
  const auto& episodes = dataset.episode_indices();
  const auto ranges = episode_row_ranges(episode_column, root);
  for (std::size_t e = 0; e < episodes.size(); ++e) {
    auto range = ranges.find(episodes[e]);
    if (range != ranges.end()) {
      const auto [first, last] = range->second;
      using torch::indexing::Slice;
      // Numeric columns: every frame, in the column's stored dtype (LeRobot reads the table directly).
      for (const FeatureSpec* feature : numeric)
        per_feature[feature->key].push_back(
            compute_episode_stats(dataset.column(feature->key).index({Slice(first, last)}), /*is_camera=*/false));
      // Cameras: the frames at sample_indices(episode length), as float32 in [0,1] like LeRobot's
      // decoded items (uint8 / 255 in float32), neither down-scaled nor divided again.
      std::map<std::string, std::vector<torch::Tensor>> frames;
      if (!cameras.empty())
        for (int64_t offset : sample_indices(last - first)) {
          Sample item = dataset.get(first + offset, context);
          for (const FeatureSpec* feature : cameras) {
            torch::Tensor frame = item.at(feature->key);
            frames[feature->key].push_back(frame.scalar_type() == torch::kUInt8 ? frame.to(torch::kFloat32) / 255
                                                                                : frame.to(torch::kFloat32));
          }
        }
      for (auto& [key, list] : frames) per_feature[key].push_back(compute_channel_stats(torch::stack(list)));
    }
    if (progress) progress(static_cast<int64_t>(e) + 1, static_cast<int64_t>(episodes.size()));
  }
  if (per_feature.empty())
    throw util::DataError("dataset " + root.string() + " has no episode data to compute statistics from");
  DatasetStats out;
  for (const auto& [key, list] : per_feature) out[key] = aggregate_stats(list);
  return out;
}

QuantileAugmentResult augment_quantile_stats(const fs::path& root, bool overwrite,
                                             const std::function<void(int64_t, int64_t)>& progress) {
  QuantileAugmentResult result;
  result.stats_file = root / "meta" / "stats.json";
  if (!fs::is_regular_file(root / "meta" / "info.json"))
    throw util::IoError("no LeRobot dataset at " + root.string() + " (meta/info.json is missing)",
                        "pass the dataset root, the folder that holds meta/info.json");
  if (!fs::is_regular_file(result.stats_file))
    throw util::IoError("dataset " + root.string() + " has no stats file " + result.stats_file.string(),
                        "LeRobot and lrhost write meta/stats.json with the dataset; recompute the full stats with "
                        "LeRobot, or copy stats.json from the dataset's source");
  // Read twice: once with key order kept (the document that is rewritten), once as tensors.
  nlohmann::ordered_json doc = io::read_json_file(result.stats_file, "meta/stats.json must be a JSON object");
  if (!doc.is_object())
    throw util::DataError("stats file " + result.stats_file.string() + " must hold a JSON object of feature → stats");
  // The typed read checks every entry (also with --overwrite, which writes the other stats back as they are).
  const DatasetStats existing = read_stats_json(result.stats_file);
  if (!overwrite && has_quantile_stats(existing)) return result;

  DatasetStats computed = compute_dataset_quantile_stats(root, progress);
  const auto names = default_quantile_names();
  for (const auto& [key, stats] : computed) {
    auto existing = doc.find(key);
    if (existing == doc.end()) {
      nlohmann::ordered_json entry = nlohmann::ordered_json::object();
      for (const auto& name : stats.names()) entry[name] = stat_to_ordered_json(stats.get(name));
      doc[key] = std::move(entry);
    } else {
      if (!existing->is_object())
        throw util::DataError("stats file " + result.stats_file.string() + ": feature '" + key +
                              "' must be an object of stat → values");
      // Assigning an existing key keeps its position; new quantile keys go after the other stats.
      for (const auto& name : names)
        if (stats.has(name)) (*existing)[name] = stat_to_ordered_json(stats.get(name));
    }
    result.features.push_back(key);
  }
  io::write_file_atomic(result.stats_file, python_json_text(doc));
  result.written = true;
  return result;
}

}  // namespace lrhost::data
