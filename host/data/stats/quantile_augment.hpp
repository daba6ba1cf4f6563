// Quantile statistics (q01, q10, q50, q90, q99) added to a dataset that was written without them, as
// LeRobot 0.6.1's scripts/augment_dataset_quantile_stats.py does: QUANTILES / QUANTILE10
// normalization (pi05) needs them, and older datasets (or ones converted from v2.1) lack them.
// LeRobot recomputes every stat per episode — numeric columns over every frame, cameras over the
// float [0,1] frames the dataset returns at sample_indices(episode length), not down-scaled — and
// aggregates across episodes. Unlike LeRobot, which replaces the whole stats.json with the
// recomputed stats, only the quantile entries are written here: every existing key, value and the
// key order are kept, so a dataset's mean/std (and runs normalized with them) do not change.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "host/data/stats/feature_stats.hpp"

namespace lrhost::data {

// LeRobot's has_quantile_stats: any feature holding any of the default quantiles.
bool has_quantile_stats(const DatasetStats& stats);

// Stats of every numeric and camera feature of the dataset at `root`, computed per episode as
// LeRobot's process_single_episode and combined with aggregate_stats (all episodes at once).
// `progress` (may be empty) is called after each episode with (done, total).
DatasetStats compute_dataset_quantile_stats(const std::filesystem::path& root,
                                            const std::function<void(int64_t, int64_t)>& progress = {});

struct QuantileAugmentResult {
  bool written = false;               // false: quantiles were present and overwrite was off
  std::vector<std::string> features;  // features whose quantiles were written
  std::filesystem::path stats_file;
};

// Adds (overwrite: replaces) the quantile stats of meta/stats.json, rewriting it atomically. Existing
// features keep all their other stats and their key order; features absent from the file are
// appended with all their recomputed stats. A missing or unreadable stats.json is an error naming it.
QuantileAugmentResult augment_quantile_stats(const std::filesystem::path& root, bool overwrite,
                                             const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace lrhost::data
