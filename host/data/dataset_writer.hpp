// Writes a LeRobot v3.0 dataset that LeRobot itself can load: data parquet with one row group per
// episode, one mp4 per camera and file (episodes appended back to back, located by from/to
// timestamps), meta/info.json, meta/episodes parquet (with per-episode stats), meta/tasks.parquet
// (pandas index metadata, so LeRobot's `tasks.iloc[i].name` works) and meta/stats.json aggregated as
// LeRobot does. Files roll over at the size limits and chunks_size like LeRobot's writer. Nothing
// is readable until finish() writes meta/info.json last, so an interrupted write never looks valid.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/data/dataset_info.hpp"
#include "host/io/video_writer.hpp"

namespace lrhost::data {

struct WriterFeature {
  std::string key;
  std::string dtype;             // numeric dtype name, "video" or "image"
  std::vector<int64_t> shape;    // cameras: [H, W, 3]
  nlohmann::ordered_json names;  // null by default; cameras get ["height","width","channels"]
};

struct WriterOptions {
  io::VideoWriterOptions video;
  int64_t chunks_size = 1000;
  int64_t data_files_size_in_mb = 100, video_files_size_in_mb = 200;
  // Byte thresholds actually used for rollover (tests set them small); default: the MB values.
  std::optional<int64_t> data_file_bytes, video_file_bytes;
  std::optional<std::string> robot_type;
};

// One episode: numeric features [N, *shape] in the feature's dtype, cameras uint8 [N, H, W, 3], and
// the task of every frame (one string means all frames).
struct EpisodeData {
  std::map<std::string, torch::Tensor> values;
  std::vector<std::string> tasks;
};

class DatasetWriter {
 public:
  // `root` must not exist or be an empty folder (LeRobot refuses to overwrite too).
  DatasetWriter(const std::filesystem::path& root, int fps, std::vector<WriterFeature> features,
                WriterOptions options = {});
  ~DatasetWriter();
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  void add_episode(const EpisodeData& episode);
  void finish();  // closes files, writes meta/; the dataset is complete after this returns
  int64_t episodes_written() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lrhost::data
