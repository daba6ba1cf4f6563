// Dataset statistics as LeRobot computes, aggregates and stores them (meta/stats.json, the per-episode
// stats of v2.1 and v3.0). Normalization is only as good as the numbers it divides by, and a policy
// trained here must see the same numbers LeRobot would have produced for the same data, so the
// computation reproduces LeRobot's numpy code bit for bit where it can: the same sub-sampling and
// down-scaling of camera frames, the same float32-or-float64 promotion, numpy's summation order, the
// histogram-based quantile estimate, and the count-weighted aggregation. Each stat tensor keeps the
// dtype numpy would have given it (float32 or float64; int64 for count and for integer values read
// from JSON), because later arithmetic on it (aggregation, /255) rounds in that dtype.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lrhost::data {

// Statistics of one feature. Vectors: each tensor has the feature's (last-axis) shape [n]; count is
// [1] int64. Cameras: per channel, shape [C,1,1], in [0,1] units (divided by 255).
struct FeatureStats {
  torch::Tensor min, max, mean, std, count;
  std::map<std::string, torch::Tensor> quantiles;  // "q01","q10","q50","q90","q99" when present
  std::map<std::string, torch::Tensor> extra;      // other stat names found in a stats file, kept as LeRobot keeps them

  bool has(const std::string& stat) const;
  // The named stat; DataError naming it (and the stats present) when absent.
  const torch::Tensor& get(const std::string& stat) const;
  // Names of all stats present, in LeRobot's order (min, max, mean, std, count, quantiles, extra).
  std::vector<std::string> names() const;
  // Sets a stat by name (routes q<digits> to quantiles, unknown names to extra).
  void set(const std::string& stat, torch::Tensor value);
};
using DatasetStats = std::map<std::string, FeatureStats>;  // feature key → stats

// The quantiles LeRobot computes (DEFAULT_QUANTILES) and their stat names.
inline const std::vector<double>& default_quantiles() {
  static const std::vector<double> q{0.01, 0.10, 0.50, 0.90, 0.99};
  return q;
}
// LeRobot's stat key for a quantile: f"q{int(q * 100):02d}" ("q01", "q50").
std::string quantile_name(double q);

// LeRobot's frame sub-sampling for camera stats (compute_stats.estimate_num_samples / sample_indices).
int64_t estimate_num_samples(int64_t dataset_len, int64_t min_num_samples = 100, int64_t max_num_samples = 10000,
                             double power = 0.75);
std::vector<int64_t> sample_indices(int64_t data_len);

// Per-episode stats as LeRobot's compute_episode_stats. Numeric features: values [N, ...] (stats over
// all but the last axis, count = N; [N] gives shape [1]). Cameras: frames [N,C,H,W] of any integer or
// float dtype (uint8 normally), sub-sampled and down-scaled like LeRobot, per-channel stats divided by
// 255 unless `is_depth_map` (then in stored units). Quantiles: LeRobot's RunningQuantileStats
// (5000-bin histogram, linear interpolation inside the bin).
FeatureStats compute_episode_stats(const torch::Tensor& values, bool is_camera, bool is_depth_map = false);

// Per-channel stats of camera frames [N,C,H,W] taken as they are: no sub-sampling, no down-scaling,
// no /255 (LeRobot 0.6.1's augment_dataset_quantile_stats computes them on the float frames the
// dataset returns). Stats have shape [C,1,1]; count = N.
FeatureStats compute_channel_stats(const torch::Tensor& frames);

// Global stats from per-episode stats as LeRobot 0.6.1's aggregate_feature_stats: count-weighted mean,
// pooled variance, min of mins, max of maxes, quantiles as the count-weighted mean of the episodes'.
FeatureStats aggregate_stats(const std::vector<FeatureStats>& per_episode);
// What LeRobot's dataset writer holds after saving these episodes in order: it folds each episode
// into the running stats with aggregate_stats([running, episode]), which rounds differently from
// one aggregate over all episodes.
FeatureStats aggregate_stats_sequential(const std::vector<FeatureStats>& per_episode);

// meta/stats.json. Reading: nested lists → float64 tensors (int64 when every number is an integer),
// scalars → shape [1], as LeRobot's load_stats (np.atleast_1d(np.array(v))). Unknown stat names are kept.
DatasetStats read_stats_json(const std::filesystem::path& file);
// Writes like LeRobot's write_stats (json.dump(indent=4)), stats in LeRobot's order.
void write_stats_json(const std::filesystem::path& file, const DatasetStats& stats);
nlohmann::json stats_to_json(const FeatureStats& stats);  // stat name → nested lists
// One stat as ndarray.tolist() gives it, for callers that edit a stats document in place.
nlohmann::ordered_json stat_to_ordered_json(const torch::Tensor& stat);
// `doc` laid out as Python's json.dump(indent=4) writes it (LeRobot's write_stats), numbers as repr().
std::string python_json_text(const nlohmann::ordered_json& doc);
// `what` names the source (file and feature) in error messages.
FeatureStats stats_from_json(const nlohmann::json& value, const std::string& what);

}  // namespace lrhost::data
