// Loading the selected episodes' rows and assembling items; see lerobot_dataset.hpp.
#include "host/data/lerobot_dataset.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "host/data/parquet/parquet_reader.hpp"
#include "host/data/video/png_codec.hpp"
#include "host/data/video/video_reader_cache.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace fs = std::filesystem;

struct LeRobotDataset::ImageSegment {
  ByteColumn bytes;
  int64_t first_row_in_column = 0;  // where the episode starts inside `bytes`
  int64_t first_local_row = 0;      // where it starts among the dataset's loaded rows
  int64_t length = 0;
};

struct LeRobotDataset::Rows {
  std::map<std::string, torch::Tensor> columns;             // wanted numeric features incl. index/timestamp/...
  std::map<std::string, std::vector<ImageSegment>> images;  // wanted image features: a segment per selected episode
};

ReadContext::ReadContext(std::size_t video_cache_size)
    : videos_(std::make_unique<VideoReaderCache>(video_cache_size)) {}
ReadContext::~ReadContext() = default;

LeRobotDataset::LeRobotDataset(const fs::path& root, DatasetOptions options)
    : meta_(DatasetMeta::read(root)), options_(std::move(options)) {
  if (options_.tolerance_s < 0) throw util::ConfigError("tolerance_s must be >= 0");
  delta_indices_ = resolve_delta_timestamps(options_.delta_timestamps, meta_.info, options_.tolerance_s);
  if (options_.episodes) {
    std::set<int64_t> unique(options_.episodes->begin(), options_.episodes->end());
    for (int64_t episode : unique) meta_.episode(episode);  // DataError naming the valid range
    episodes_.assign(unique.begin(), unique.end());
    if (episodes_.empty())
      throw util::ConfigError("episodes is empty; give at least one episode index or leave it unset");
  } else {
    for (const Episode& episode : meta_.episodes) episodes_.push_back(episode.index);
  }
  if (options_.keys) {
    for (const std::string& key : *options_.keys) meta_.info.feature(key);  // DataError listing the features
    for (const auto& [key, offsets] : delta_indices_)
      if (!wanted(key))
        throw util::ConfigError("delta_timestamps['" + key + "'] names a feature that 'keys' leaves out");
  }
  // Rows are in selected-episode order.
  first_row_of_episode_.assign(meta_.episodes.size(), -1);
  for (int64_t episode_index : episodes_) {
    first_row_of_episode_[static_cast<std::size_t>(episode_index)] = num_frames_;
    num_frames_ += meta_.episode(episode_index).length;
  }
  std::set<fs::path> files;
  for (int64_t episode_index : episodes_) {
    fs::path file = meta_.data_file(meta_.episode(episode_index));
    if (files.insert(file).second && !fs::exists(file))
      throw util::IoError("data file " + file.string() + " is missing",
                          "meta/episodes lists episode " + std::to_string(episode_index) + " in it");
  }
  if (!options_.lazy_rows) rows();
}

const LeRobotDataset::Rows& LeRobotDataset::rows() const {
  std::call_once(rows_loaded_, [this] { rows_ = load_rows(); });
  return *rows_;
}

bool LeRobotDataset::wanted(const std::string& key) const {
  if (!options_.keys) return true;
  const auto& defaults = default_feature_keys();
  return std::find(defaults.begin(), defaults.end(), key) != defaults.end() ||
         std::find(options_.keys->begin(), options_.keys->end(), key) != options_.keys->end();
}

LeRobotDataset::~LeRobotDataset() = default;

std::unique_ptr<LeRobotDataset::Rows> LeRobotDataset::load_rows() const {
  auto loaded = std::make_unique<Rows>();
  // Group the selected episodes by data file so that each file is read once.
  std::map<fs::path, std::vector<int64_t>> by_file;
  std::vector<fs::path> file_order;
  for (int64_t episode : episodes_) {
    fs::path file = meta_.data_file(meta_.episode(episode));
    if (!by_file.count(file)) file_order.push_back(file);
    by_file[file].push_back(episode);
  }
  std::vector<const FeatureSpec*> numeric, images;
  for (const FeatureSpec& feature : meta_.info.features) {
    if (!wanted(feature.key)) continue;
    if (feature.kind == FeatureKind::Numeric) numeric.push_back(&feature);
    if (feature.kind == FeatureKind::Image) images.push_back(&feature);
  }
  std::map<std::string, std::vector<torch::Tensor>> pieces;
  // Rows are appended in selected-episode order, which may interleave files; keep them per episode.
  std::map<int64_t, std::map<std::string, torch::Tensor>> episode_columns;
  std::map<int64_t, std::map<std::string, std::pair<ByteColumn, int64_t>>> episode_images;
  for (const fs::path& file : file_order) {
    ParquetReader reader(file);
    std::map<std::string, torch::Tensor> file_columns;
    for (const FeatureSpec* feature : numeric)
      file_columns[feature->key] = reader.read_tensor(feature->key, feature->scalar_type, feature->item_shape());
    std::map<std::string, ByteColumn> file_images;
    for (const FeatureSpec* feature : images) file_images.emplace(feature->key, reader.read_image_bytes(feature->key));
    const torch::Tensor& episode_column = file_columns.at("episode_index");
    const torch::Tensor& index_column = file_columns.at("index");
    // Rows per episode in this file, counted in one pass (an episode must not have stray rows).
    std::unordered_map<int64_t, int64_t> rows_per_episode;
    const int64_t* episode_of_row = episode_column.data_ptr<int64_t>();
    for (int64_t row = 0; row < episode_column.numel(); ++row) ++rows_per_episode[episode_of_row[row]];
    for (int64_t episode_index : by_file[file]) {
      const Episode& episode = meta_.episode(episode_index);
      const int64_t count = episode.length;
      if (rows_per_episode[episode_index] != count)
        throw util::DataError(file.string() + ": episode " + std::to_string(episode_index) + " should have " +
                              std::to_string(count) + " contiguous rows (meta/episodes), found " +
                              std::to_string(rows_per_episode[episode_index]));
      // Located through the sorted global `index` column (binary search), then checked row by row:
      // indices from..to-1, all of this episode. O(rows) per file in total.
      const int64_t* indices = index_column.data_ptr<int64_t>();
      const int64_t rows_in_file = index_column.numel();
      const int64_t first = std::lower_bound(indices, indices + rows_in_file, episode.from_index) - indices;
      bool found = first + count <= rows_in_file;
      for (int64_t row = first; found && row < first + count; ++row)
        found = indices[row] == episode.from_index + (row - first) && episode_of_row[row] == episode_index;
      if (!found)
        throw util::DataError(file.string() + ": the 'index' column of episode " + std::to_string(episode_index) +
                              " is not " + std::to_string(episode.from_index) + ".." +
                              std::to_string(episode.to_index - 1) + " in contiguous rows, as meta/episodes says");
      for (const auto& [key, column] : file_columns)
        episode_columns[episode_index][key] = column.narrow(0, first, count);
      for (const auto& [key, bytes] : file_images) episode_images[episode_index][key] = {bytes, first};
    }
  }
  for (int64_t episode_index : episodes_) {
    const int64_t first_row = first_row_of_episode_[static_cast<std::size_t>(episode_index)];
    for (auto& [key, column] : episode_columns[episode_index]) pieces[key].push_back(column);
    for (auto& [key, image] : episode_images[episode_index])
      loaded->images[key].push_back({image.first, image.second, first_row, meta_.episode(episode_index).length});
  }
  for (auto& [key, list] : pieces) loaded->columns[key] = torch::cat(list).contiguous();
  return loaded;
}

const torch::Tensor& LeRobotDataset::column(const std::string& key) const {
  const FeatureSpec& feature = meta_.info.feature(key);  // unknown key: DataError listing the features
  if (feature.kind != FeatureKind::Numeric) throw util::DataError("feature '" + key + "' is not a numeric column");
  if (!wanted(key)) throw util::DataError("feature '" + key + "' is not loaded: the dataset's 'keys' leave it out");
  return rows().columns.at(key);
}

torch::Tensor LeRobotDataset::read_camera(const std::string& key, const std::vector<int64_t>& local_rows,
                                          int64_t episode_index, ReadContext& context) const {
  const FeatureSpec& feature = meta_.info.feature(key);
  if (feature.kind == FeatureKind::Image) {
    std::vector<torch::Tensor> frames;
    for (int64_t row : local_rows) {
      const auto& segments = rows().images.at(key);
      // Segments are in row order: the last one starting at or before `row` holds it.
      auto segment =
          std::prev(std::upper_bound(segments.begin(), segments.end(), row,
                                     [](int64_t r, const ImageSegment& s) { return r < s.first_local_row; }));
      int64_t column_row = segment->first_row_in_column + (row - segment->first_local_row);
      frames.push_back(decode_png(segment->bytes.at(column_row),
                                  "image column '" + key + "' episode " + std::to_string(episode_index)));
    }
    return torch::stack(frames);
  }
  const Episode& episode = meta_.episode(episode_index);
  const EpisodeVideo& video = episode.videos.at(key);
  const float* timestamps = rows().columns.at("timestamp").data_ptr<float>();
  std::vector<double> query;
  for (int64_t row : local_rows) query.push_back(video.from_timestamp + static_cast<double>(timestamps[row]));
  fs::path file = meta_.video_file(episode, key);
  try {
    return context.videos().get(file).frames_at(query, options_.tolerance_s);
  } catch (const util::DataError& error) {
    throw util::DataError("episode " + std::to_string(episode_index) + ", camera '" + key + "': " + error.what(),
                          error.hint());
  } catch (const util::IoError& error) {  // missing, truncated or undecodable file: say which episode/camera
    throw util::IoError("episode " + std::to_string(episode_index) + ", camera '" + key + "': " + error.what(),
                        error.hint());
  }
}

Sample LeRobotDataset::get(int64_t i, ReadContext& context) const {
  if (i < 0 || i >= num_frames_)
    throw util::DataError("dataset index " + std::to_string(i) + " is out of range 0.." +
                          std::to_string(num_frames_ - 1));
  Sample sample;
  const std::map<std::string, torch::Tensor>& columns = rows().columns;
  const int64_t episode_index = columns.at("episode_index").data_ptr<int64_t>()[i];
  const int64_t global_index = columns.at("index").data_ptr<int64_t>()[i];
  const Episode& episode = meta_.episode(episode_index);
  const int64_t episode_first_row = first_row_of_episode_[episode_index];
  auto rows_of = [&](const std::string& key, Sample& out) -> std::vector<int64_t> {
    auto deltas = delta_indices_.find(key);
    if (deltas == delta_indices_.end()) return {i};
    WindowQuery query = window_query(global_index, episode.from_index, episode.to_index, deltas->second);
    out[key + "_is_pad"] = query.is_pad;
    std::vector<int64_t> rows;
    for (int64_t index : query.indices) rows.push_back(episode_first_row + (index - episode.from_index));
    return rows;
  };
  for (const FeatureSpec& feature : meta_.info.features) {
    if (feature.kind == FeatureKind::Text || !wanted(feature.key)) continue;
    bool windowed = delta_indices_.count(feature.key) > 0;
    std::vector<int64_t> rows = rows_of(feature.key, sample);
    if (feature.kind == FeatureKind::Numeric) {
      const torch::Tensor& column = columns.at(feature.key);
      sample[feature.key] = windowed ? column.index_select(0, torch::tensor(rows, torch::kLong)) : column[i].clone();
    } else {
      torch::Tensor frames = read_camera(feature.key, rows, episode_index, context);
      sample[feature.key] = windowed ? frames : frames.squeeze(0);
    }
  }
  return sample;
}

}  // namespace lrhost::data
