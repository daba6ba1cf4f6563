// Whole-dataset verification (see dataset_verify.hpp). Every check records a problem and moves on;
// only a dataset whose tables cannot be read at all ends the walk early, since then no file can be
// located. Reads go through the same readers training uses, so what passes here loads there.
#include "host/data/dataset_verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <memory>

#include "host/data/dataset_meta.hpp"
#include "host/data/parquet/parquet_reader.hpp"
#include "host/data/video/png_codec.hpp"
#include "host/data/video/video_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace fs = std::filesystem;

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// "0-4, 7, 9-12": a file holding a hundred episodes names them in a few characters, not a hundred.
std::string episode_ranges(std::vector<int64_t> indices) {
  std::sort(indices.begin(), indices.end());
  std::string text;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(indices[i]);
    if (j > i) text += "-" + std::to_string(indices[j]);
    i = j + 1;
  }
  return text;
}

std::string episode_list(const std::vector<const Episode*>& episodes) {
  std::vector<int64_t> indices;
  for (const Episode* episode : episodes) indices.push_back(episode->index);
  return episode_ranges(std::move(indices));
}

// One damaged file usually breaks the same check in many episodes (a truncated mp4: every episode
// after the cut). Such problems are collected per file and cause and reported as one line with the
// episode ranges, the count and the first instance, instead of one line per episode.
struct EpisodeProblemGroup {
  fs::path file;
  std::string cause;  // "camera 'top': frame times with no frame within tolerance_s=0.0001"
  std::string unit;   // what `count` counts ("frame times"), or empty when one per episode
  std::vector<int64_t> episodes;
  int64_t count = 0;
  std::string first;  // the first instance, with its episode
};

class Verifier {
 public:
  Verifier(const fs::path& root, const VerifyOptions& options) : root_(root), options_(options) {}

  VerifyReport run() {
    try {
      meta_ = DatasetMeta::read_tables(root_);
    } catch (const std::exception& error) {
      problem(root_, util::describe(error));  // the message names the table that failed
      return std::move(report_);
    }
    const fs::path info_file = root_ / "meta" / "info.json";
    for (std::string mismatch : meta_.consistency_problems()) {
      // The messages start with info.json's path when it is the file at fault; it is printed once.
      if (mismatch.starts_with(info_file.string() + " ")) mismatch.erase(0, info_file.string().size() + 1);
      problem(info_file, std::move(mismatch));
    }
    try {
      meta_.load_stats();
    } catch (const std::exception& error) {
      problem(root_ / "meta", "statistics: " + util::describe(error));
    }
    check_data_files();
    report_episode_problems();
    check_videos();
    report_episode_problems();
    return std::move(report_);
  }

 private:
  fs::path root_;
  VerifyOptions options_;
  DatasetMeta meta_;
  VerifyReport report_;
  // Each episode's timestamp column as read from its data file; videos are checked at these times
  // (as the loader queries them), or at k / fps when the data file could not be read.
  std::map<int64_t, std::vector<double>> timestamps_;

  std::vector<EpisodeProblemGroup> groups_;  // in first-seen order

  void problem(const fs::path& file, std::string what) { report_.problems.push_back({file, std::move(what)}); }

  // Records that `cause` hit `episode` of `file` (`count` times, first as `detail`); reported by
  // report_episode_problems as one line per file and cause.
  void episode_problem(const fs::path& file, const std::string& cause, const std::string& unit, int64_t episode,
                       int64_t count, const std::string& detail) {
    auto found = std::find_if(groups_.begin(), groups_.end(),
                              [&](const EpisodeProblemGroup& g) { return g.file == file && g.cause == cause; });
    if (found == groups_.end()) {
      groups_.push_back({file, cause, unit, {}, 0, fmt::format("episode {}: {}", episode, detail)});
      found = std::prev(groups_.end());
    }
    found->episodes.push_back(episode);
    found->count += count;
  }

  void report_episode_problems() {
    for (const EpisodeProblemGroup& g : groups_) {
      const std::size_t n = g.episodes.size();
      std::string where = fmt::format("episode{} {}", n == 1 ? "" : "s", episode_ranges(g.episodes));
      std::string count = g.unit.empty() ? fmt::format("{} episode{}", n, n == 1 ? "" : "s")
                                         : fmt::format("{} {} in {} episode{}", g.count, g.unit, n, n == 1 ? "" : "s");
      problem(g.file, fmt::format("{}: {} ({}); first: {}", g.cause, where, count, g.first));
    }
    groups_.clear();
  }

  // Episodes grouped by the file that holds them, in first-use order (paths from the templates).
  template <typename PathOf>
  std::vector<std::pair<fs::path, std::vector<const Episode*>>> group_by_file(PathOf path_of, const std::string& what) {
    std::vector<std::pair<fs::path, std::vector<const Episode*>>> groups;
    std::map<fs::path, std::size_t> position;
    for (const Episode& episode : meta_.episodes) {
      fs::path file;
      try {
        file = path_of(episode);
      } catch (const std::exception& error) {
        problem(root_ / "meta" / "info.json",
                what + " of episode " + std::to_string(episode.index) + ": " + util::describe(error));
        continue;
      }
      auto [it, inserted] = position.emplace(file, groups.size());
      if (inserted) groups.push_back({file, {}});
      groups[it->second].second.push_back(&episode);
    }
    return groups;
  }

  void check_data_files() {
    auto groups = group_by_file([&](const Episode& episode) { return meta_.data_file(episode); }, "data file");
    int64_t rows = 0;
    for (const auto& [file, episodes] : groups) rows += check_data_file(file, episodes);
    if (rows != meta_.info.total_frames)
      problem(root_ / "meta" / "info.json",
              fmt::format("says total_frames={} but the data files hold {} rows", meta_.info.total_frames, rows));
  }

  // Returns the file's row count (0 when it cannot be read).
  int64_t check_data_file(const fs::path& file, const std::vector<const Episode*>& episodes) {
    std::unique_ptr<ParquetReader> reader;
    try {
      reader = std::make_unique<ParquetReader>(file);
    } catch (const std::exception& error) {
      problem(file, util::describe(error) + " (holds episodes " + episode_list(episodes) + ")");
      return 0;
    }
    ++report_.parquet_files;
    const int64_t rows = reader->num_rows();
    report_.rows += rows;
    int64_t expected = 0;
    for (const Episode* episode : episodes) expected += episode->length;
    if (rows != expected)
      problem(file, fmt::format("has {} rows, but meta/episodes puts {} rows in it (episodes {})", rows, expected,
                                episode_list(episodes)));

    std::map<std::string, torch::Tensor> columns;
    for (const FeatureSpec& feature : meta_.info.features) {
      if (feature.kind != FeatureKind::Numeric) continue;
      try {
        columns[feature.key] = reader->read_tensor(feature.key, feature.scalar_type, feature.item_shape());
      } catch (const std::exception& error) {
        problem(file, util::describe(error));
      }
    }
    if (columns.count("episode_index") && columns.count("index")) check_episode_rows(file, episodes, columns);
    for (const FeatureSpec& feature : meta_.info.features)
      if (feature.kind == FeatureKind::Image) check_images(file, *reader, feature);
    return rows;
  }

  // Each episode's rows: contiguous, its global index range, frame_index 0..n-1, timestamps 1/fps apart.
  void check_episode_rows(const fs::path& file, const std::vector<const Episode*>& episodes,
                          const std::map<std::string, torch::Tensor>& columns) {
    // int64 in every LeRobot dataset; converted anyway so that a narrower declared dtype reads too.
    const torch::Tensor episode_column = columns.at("episode_index").to(torch::kLong).contiguous();
    const torch::Tensor index_column = columns.at("index").to(torch::kLong).contiguous();
    const int64_t* episode_of_row = episode_column.data_ptr<int64_t>();
    const int64_t* indices = index_column.data_ptr<int64_t>();
    const int64_t rows = index_column.numel();
    std::map<int64_t, int64_t> rows_per_episode;
    for (int64_t row = 0; row < rows; ++row) ++rows_per_episode[episode_of_row[row]];
    for (const Episode* episode : episodes) {
      if (rows_per_episode[episode->index] != episode->length) {
        episode_problem(file, "row count differs from the episode's length in meta/episodes", "", episode->index, 1,
                        fmt::format("{} rows, length {}", rows_per_episode[episode->index], episode->length));
        continue;
      }
      const int64_t first = std::find(episode_of_row, episode_of_row + rows, episode->index) - episode_of_row;
      bool contiguous = first + episode->length <= rows;
      for (int64_t row = first; contiguous && row < first + episode->length; ++row)
        contiguous = episode_of_row[row] == episode->index && indices[row] == episode->from_index + (row - first);
      if (!contiguous) {
        episode_problem(file, "rows are not contiguous with the 'index' range meta/episodes gives", "", episode->index,
                        1, fmt::format("expected 'index' {}..{}", episode->from_index, episode->to_index - 1));
        continue;
      }
      if (auto found = columns.find("frame_index"); found != columns.end()) {
        const torch::Tensor frame_column = found->second.to(torch::kLong).contiguous();
        const int64_t* frame_index = frame_column.data_ptr<int64_t>() + first;
        for (int64_t k = 0; k < episode->length; ++k)
          if (frame_index[k] != k) {
            episode_problem(
                file, "frame_index does not count 0..length-1 in order", "", episode->index, 1,
                fmt::format("frame_index is {} at frame {} (length {})", frame_index[k], k, episode->length));
            break;
          }
      }
      if (auto found = columns.find("timestamp"); found != columns.end())
        check_timestamps(file, *episode,
                         found->second.to(torch::kDouble).narrow(0, first, episode->length).contiguous());
    }
  }

  // LeRobot's check_timestamps_sync: consecutive timestamps are 1/fps apart within tolerance_s.
  void check_timestamps(const fs::path& file, const Episode& episode, const torch::Tensor& timestamps) {
    const double* t = timestamps.data_ptr<double>();
    std::vector<double>& kept = timestamps_[episode.index];
    kept.assign(t, t + episode.length);
    const double period = 1.0 / meta_.info.fps;
    int64_t bad = 0, first_bad = -1;
    for (int64_t k = 1; k < episode.length; ++k) {
      if (std::abs(t[k] - t[k - 1] - period) <= options_.tolerance_s) continue;
      if (!bad++) first_bad = k;
    }
    if (bad)
      episode_problem(file,
                      fmt::format("timestamps not 1/fps = {:.6f} s after the previous one (tolerance_s={})", period,
                                  options_.tolerance_s),
                      "timestamps", episode.index, bad,
                      fmt::format("frame {}: {:.6f} -> {:.6f}", first_bad, t[first_bad - 1], t[first_bad]));
  }

  void check_images(const fs::path& file, const ParquetReader& reader, const FeatureSpec& feature) {
    ByteColumn bytes;
    try {
      bytes = reader.read_image_bytes(feature.key);
    } catch (const std::exception& error) {
      problem(file, util::describe(error));
      return;
    }
    const std::vector<int64_t> expected = feature.chw_shape();
    int64_t bad = 0;
    std::string first;
    for (int64_t row = 0; row < bytes.size(); ++row) {
      std::string what = fmt::format("image column '{}' row {}", feature.key, row);
      try {
        torch::Tensor image = decode_png(bytes.at(row), what);
        ++report_.images;
        if (image.sizes().vec() != expected) {
          if (!bad++)
            first = fmt::format("{} is {}, info.json declares {}", what, shape_text(image.sizes().vec()),
                                shape_text(expected));
        }
      } catch (const std::exception& error) {
        if (!bad++) first = util::describe(error);
      }
    }
    if (bad) problem(file, fmt::format("{} of {} images are bad; first: {}", bad, bytes.size(), first));
  }

  void check_videos() {
    for (const std::string& key : meta_.info.keys_of(FeatureKind::Video)) {
      auto groups =
          group_by_file([&](const Episode& episode) { return meta_.video_file(episode, key); }, "video '" + key + "'");
      for (const auto& [file, episodes] : groups) check_video(file, meta_.info.feature(key), episodes);
    }
  }

  void check_video(const fs::path& file, const FeatureSpec& feature, const std::vector<const Episode*>& episodes) {
    std::unique_ptr<VideoReader> reader;
    try {
      reader = std::make_unique<VideoReader>(file);
    } catch (const std::exception& error) {
      problem(file, util::describe(error) + " (camera '" + feature.key + "', episodes " + episode_list(episodes) + ")");
      return;
    }
    ++report_.video_files;
    const VideoStreamInfo& info = reader->info();
    if (info.height != feature.shape[0] || info.width != feature.shape[1])
      problem(file, fmt::format("frames are {}x{}, info.json declares {}x{} for '{}'", info.width, info.height,
                                feature.shape[1], feature.shape[0], feature.key));
    VideoReader::Scan scan = reader->scan_all_frames();
    std::vector<double>& times = scan.frame_times;
    report_.video_frames += static_cast<int64_t>(times.size());
    if (!scan.error.empty())
      problem(file, fmt::format("decoding stopped after {} frames: {}", times.size(), scan.error));
    std::sort(times.begin(), times.end());

    int64_t expected = 0;
    for (const Episode* episode : episodes) expected += episode->length;
    const auto decoded = static_cast<int64_t>(times.size());
    if (decoded < expected)
      problem(file, fmt::format("{} frames decode, but its episodes ({}) have {} frames (truncated?)", decoded,
                                episode_list(episodes), expected));
    else if (decoded > expected)
      report_.notes.push_back(fmt::format("{}: {} frames decode, {} more than its episodes ({}) use", file.string(),
                                          decoded, decoded - expected, episode_list(episodes)));
    for (const Episode* episode : episodes) check_episode_frames(file, feature.key, *episode, times);
  }

  // Every frame time of the episode has a decoded frame within tolerance_s, as the loader requires.
  void check_episode_frames(const fs::path& file, const std::string& key, const Episode& episode,
                            const std::vector<double>& times) {
    const EpisodeVideo& video = episode.videos.at(key);
    const double last = times.empty() ? 0.0 : times.back();
    const double period = 1.0 / meta_.info.fps;
    if (video.from_timestamp < 0 || video.to_timestamp > last + period + options_.tolerance_s)
      episode_problem(file,
                      fmt::format("camera '{}': from/to_timestamp lie outside the video (frames at {})", key,
                                  times.empty() ? "none" : fmt::format("{:.6f}..{:.6f} s", times.front(), last)),
                      "", episode.index, 1, fmt::format("{:.6f}..{:.6f} s", video.from_timestamp, video.to_timestamp));
    auto found = timestamps_.find(episode.index);
    int64_t missing = 0;
    std::string first;
    for (int64_t k = 0; k < episode.length; ++k) {
      double query =
          video.from_timestamp + (found != timestamps_.end() ? found->second[static_cast<std::size_t>(k)] : k * period);
      auto after = std::lower_bound(times.begin(), times.end(), query);
      double distance = std::numeric_limits<double>::infinity();
      double nearest = 0;
      if (after != times.end()) distance = *after - query, nearest = *after;
      if (after != times.begin() && query - *std::prev(after) <= distance)
        distance = query - *std::prev(after), nearest = *std::prev(after);
      if (distance <= options_.tolerance_s) continue;
      if (!missing++)
        first = times.empty() ? fmt::format("t={:.6f} s (no frame decoded)", query)
                              : fmt::format("t={:.6f} s, nearest frame at t={:.6f} s", query, nearest);
    }
    if (missing)
      episode_problem(
          file, fmt::format("camera '{}': frame times with no frame within tolerance_s={}", key, options_.tolerance_s),
          "frame times", episode.index, missing, first);
  }
};

}  // namespace

VerifyReport verify_dataset(const fs::path& root, const VerifyOptions& options) {
  return Verifier(root, options).run();
}

}  // namespace lrhost::data
