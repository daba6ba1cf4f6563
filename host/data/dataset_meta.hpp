// Everything under <root>/meta of a LeRobot dataset: info.json, the episode table, the task table
// and the statistics, plus the paths of each episode's data and video files. v3.0 reads
// meta/episodes/*/*.parquet and meta/tasks.parquet; v2.1 (one file per episode) reads
// episodes.jsonl, tasks.jsonl and episodes_stats.jsonl and presents the same tables, so nothing
// downstream knows the difference. Formats: shared/reference/lerobot.md sections 1.1-1.5, 1.10.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/data/dataset_info.hpp"
#include "host/data/stats/feature_stats.hpp"

namespace lrhost::data {

// Where one camera's frames of an episode live: a file and a [from, to) span of its timeline.
struct EpisodeVideo {
  int64_t chunk_index = 0, file_index = 0;
  double from_timestamp = 0, to_timestamp = 0;
};

struct Episode {
  int64_t index = 0;
  int64_t length = 0;
  std::vector<std::string> tasks;
  int64_t data_chunk = 0, data_file = 0;  // v3.0 data file; v2.1: episode chunk
  int64_t from_index = 0, to_index = 0;   // half-open global frame range
  std::map<std::string, EpisodeVideo> videos;
};

struct DatasetMeta {
  std::filesystem::path root;
  DatasetInfo info;
  std::vector<Episode> episodes;   // ordered by episode index; episodes[i].index == i
  std::vector<std::string> tasks;  // by task_index
  std::optional<DatasetStats> stats;
  // A mixture normalized per dataset (dataset.stats = "per_dataset"): each dataset's stats by its
  // name, in the order of the `dataset_index` its samples carry, in the mixture's feature names and
  // widths; empty otherwise. `stats` then still holds the pooled stats (for reports).
  std::vector<std::pair<std::string, DatasetStats>> per_dataset_stats;

  // Reads the tables and checks them against each other (DataError naming the first mismatch), then
  // loads the statistics.
  static DatasetMeta read(const std::filesystem::path& root);
  // The tables only, unchecked: for `lrhost dataset verify`, which reports every mismatch instead
  // of stopping at the first. Still throws when a table cannot be read at all.
  static DatasetMeta read_tables(const std::filesystem::path& root);
  // Every disagreement between info.json, the episode table and the task table (empty: consistent).
  std::vector<std::string> consistency_problems() const;
  void load_stats();  // meta/stats.json, or v2.1's aggregated episodes_stats.jsonl; none: nullopt

  const Episode& episode(int64_t index) const;  // DataError naming the valid range
  std::filesystem::path data_file(const Episode& episode) const;
  std::filesystem::path video_file(const Episode& episode, const std::string& video_key) const;
  const std::string& task(int64_t task_index) const;
};

}  // namespace lrhost::data
