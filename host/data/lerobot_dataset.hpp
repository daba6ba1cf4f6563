// A LeRobot dataset opened for training: the selected episodes' rows (the wanted numeric columns and
// image bytes) loaded from their parquet files into contiguous tensors — at construction, or with
// `lazy_rows` at the first get()/column(), so that opening reads only the metadata — and get(i)
// assembling one item exactly as LeRobot's __getitem__ does
// (columns, delta windows with `<key>_is_pad`, video frames at from_timestamp + timestamp, PNG image
// columns decoded). Cameras come back as uint8 [C,H,W] ([T,C,H,W] with a window); the loader
// converts to float. Decoding state (open videos) lives in a ReadContext that each worker thread
// owns, so the dataset itself is immutable after construction and safe to share between threads.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/data/dataset_meta.hpp"
#include "host/data/delta_windows.hpp"
#include "host/data/frame_source.hpp"

namespace lrhost::data {

class VideoReaderCache;
class ByteColumn;

struct DatasetOptions {
  DeltaTimestamps delta_timestamps;
  std::optional<std::vector<int64_t>> episodes;  // all when unset
  double tolerance_s = 1e-4;
  // Features to return (the five index columns always come along); all when unset. Leaving cameras
  // out skips their decoding entirely, e.g. for state-only policies.
  std::optional<std::vector<std::string>> keys;
  // Load the rows at the first get() or column() (thread-safe) instead of in the constructor. A
  // mixture's members are opened so: opening 100 datasets reads only their metadata, and a member
  // the run never draws from (e.g. the probe open of a recipe) never loads its rows. The constructor
  // still checks the metadata and that every data file exists; row-level errors (an episode's rows
  // not where meta/episodes says) then come from the first read.
  bool lazy_rows = false;
};

// Per-thread decoding state: an LRU of open video files.
class ReadContext {
 public:
  explicit ReadContext(std::size_t video_cache_size = 8);
  ~ReadContext();
  VideoReaderCache& videos() { return *videos_; }

 private:
  std::unique_ptr<VideoReaderCache> videos_;
};

class LeRobotDataset final : public FrameSource {
 public:
  LeRobotDataset(const std::filesystem::path& root, DatasetOptions options = {});
  ~LeRobotDataset() override;

  const DatasetMeta& meta() const override { return meta_; }
  const DatasetOptions& options() const { return options_; }
  const DeltaIndices& delta_indices() const override { return delta_indices_; }
  int64_t size() const override { return num_frames_; }                               // frames of the selected episodes
  const std::vector<int64_t>& episode_indices() const override { return episodes_; }  // selected, ascending

  // Item i (0 <= i < size(), in selected-episode order). DataError naming the index when out of range,
  // and for video frames outside tolerance (naming episode, camera and timestamp).
  Sample get(int64_t i, ReadContext& context) const override;
  // A numeric column over all selected rows ([size(), ...]), e.g. "action" for baselines and tests;
  // DataError for a feature `keys` leaves out (its rows are not loaded).
  const torch::Tensor& column(const std::string& key) const override;

 private:
  struct ImageSegment;
  struct Rows;
  bool wanted(const std::string& key) const;
  const Rows& rows() const;  // loads them once
  std::unique_ptr<Rows> load_rows() const;
  torch::Tensor read_camera(const std::string& key, const std::vector<int64_t>& local_rows, int64_t episode,
                            ReadContext& context) const;

  DatasetMeta meta_;
  DatasetOptions options_;
  DeltaIndices delta_indices_;
  std::vector<int64_t> episodes_;              // selected episode indices
  std::vector<int64_t> first_row_of_episode_;  // by episode index; -1 when not selected
  int64_t num_frames_ = 0;
  mutable std::once_flag rows_loaded_;
  mutable std::unique_ptr<const Rows> rows_;
};

}  // namespace lrhost::data
