// Unit tests of the LeRobot dataset reader and writer (host/data/dataset_info, dataset_meta,
// path_template, delta_windows, lerobot_dataset, dataset_writer, synthetic_push): a written dataset
// read back value by value (numeric columns, default columns, tasks, PNG image columns exactly, video
// frames within codec tolerance at exact timestamps), file and chunk rollover, episode subsets, delta
// windows with clamping and padding masks, info.json parsing and every metadata error naming its
// file, broken data and video files, a v2.1 dataset built from parts, the synthetic push task, and
// `dataset verify` (every problem listed with its file).
#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "host/data/dataset_info.hpp"
#include "host/data/dataset_meta.hpp"
#include "host/data/dataset_verify.hpp"
#include "host/data/dataset_writer.hpp"
#include "host/data/delta_windows.hpp"
#include "host/data/lerobot_dataset.hpp"
#include "host/data/parquet/parquet_reader.hpp"
#include "host/data/parquet/parquet_writer.hpp"
#include "host/data/path_template.hpp"
#include "host/data/synthetic_push.hpp"
#include "host/data/video/png_codec.hpp"
#include "host/data/video/video_reader.hpp"
#include "host/io/video_writer.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::contains;
using lrhost::test::write_text;

using namespace lrhost;
using namespace lrhost::data;
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

using lrhost::test::remove_tree;
using lrhost::test::TempDir;

using lrhost::test::error_of;

#define CHECK_HAS(text, part) CHECK_MESSAGE(contains(text, part), "'" << (part) << "' not in: " << (text))

ojson read_json(const fs::path& file) {
  std::ifstream in(file);
  return ojson::parse(in);
}
void edit_info(const fs::path& root, const std::function<void(ojson&)>& edit) {
  ojson info = read_json(root / "meta" / "info.json");
  edit(info);
  write_text(root / "meta" / "info.json", info.dump(4));
}

// Captures spdlog output while alive.
struct LogCapture {
  std::ostringstream stream;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  LogCapture() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous); }
  std::string text() const { return stream.str(); }
};

// --- the test dataset ---------------------------------------------------------------------------
// fps 10, episodes of lengths 5, 9, 3, 7; every value is a function of (episode e, frame k) so the
// reader's output identifies the frame it came from.
constexpr int kFps = 10;
const std::vector<int64_t> kLengths{5, 9, 3, 7};
constexpr int64_t kTotal = 24;
constexpr int kCam = 32, kImg = 16;
const char* kVideoKey = "observation.images.cam";
const char* kImageKey = "observation.images.wrist";
const std::vector<std::string> kTasks{"pick the cube", "place the cube", "stack the cubes"};

int64_t episode_from(int e) {
  int64_t from = 0;
  for (int i = 0; i < e; ++i) from += kLengths[i];
  return from;
}
float state_value(int e, int k, int j) {
  return static_cast<float>(e * 100 + k) + 0.25f * j;
}
float action_value(int e, int k, int j) {
  return -static_cast<float>(e * 100 + k) - 0.5f * j;
}
float grid_value(int e, int k, int i) {
  return static_cast<float>(e * 1000 + k * 10 + i);
}
int64_t counter_value(int e, int k) {
  return e * 1000 + k;
}
// Episode 0: task 0; 1: task 1; 2: task 0; 3: per frame, task 0 on even and task 2 on odd frames.
int64_t task_of(int e, int k) {
  if (e == 1) return 1;
  if (e == 3) return k % 2 ? 2 : 0;
  return 0;
}
// Video frame: one flat colour per (e, k); red steps by 12 per frame, green by 40 per episode.
std::array<int, 3> cam_colour(int e, int k) {
  return {10 + 12 * k, 30 + 40 * e, 200 - 15 * k};
}
torch::Tensor cam_frame_chw(int e, int k) {
  auto c = cam_colour(e, k);
  return torch::tensor({c[0], c[1], c[2]}, torch::kUInt8).view({3, 1, 1}).expand({3, kCam, kCam}).contiguous();
}
// Image frame: a deterministic pattern per (e, k), PNG (lossless).
torch::Tensor image_frame_hwc(int e, int k) {
  auto y = torch::arange(kImg, torch::kLong).view({kImg, 1, 1});
  auto x = torch::arange(kImg, torch::kLong).view({1, kImg, 1});
  auto c = torch::arange(3, torch::kLong).view({1, 1, 3});
  return ((x * 7 + y * 13 + c * 29 + e * 31 + k * 17) % 256).to(torch::kUInt8);
}

std::vector<WriterFeature> test_features(bool video, bool image) {
  std::vector<WriterFeature> features{{"observation.state", "float32", {3}, {"x", "y", "z"}},
                                      {"action", "float32", {2}, nullptr},
                                      {"grid", "float32", {2, 2}, nullptr},
                                      {"counter", "int64", {1}, nullptr}};
  if (video) features.push_back({kVideoKey, "video", {kCam, kCam, 3}, nullptr});
  if (image) features.push_back({kImageKey, "image", {kImg, kImg, 3}, nullptr});
  return features;
}

EpisodeData test_episode(int e, bool video, bool image) {
  const int64_t n = kLengths[e];
  EpisodeData data;
  auto state = torch::empty({n, 3}), action = torch::empty({n, 2}), grid = torch::empty({n, 2, 2});
  auto counter = torch::empty({n}, torch::kLong);
  auto cam = torch::empty({n, kCam, kCam, 3}, torch::kUInt8), img = torch::empty({n, kImg, kImg, 3}, torch::kUInt8);
  for (int k = 0; k < n; ++k) {
    for (int j = 0; j < 3; ++j) state[k][j] = state_value(e, k, j);
    for (int j = 0; j < 2; ++j) action[k][j] = action_value(e, k, j);
    for (int i = 0; i < 4; ++i) grid[k][i / 2][i % 2] = grid_value(e, k, i);
    counter[k] = counter_value(e, k);
    cam[k].copy_(cam_frame_chw(e, k).permute({1, 2, 0}));
    img[k].copy_(image_frame_hwc(e, k));
  }
  data.values = {{"observation.state", state}, {"action", action}, {"grid", grid}, {"counter", counter}};
  if (video) data.values[kVideoKey] = cam;
  if (image) data.values[kImageKey] = img;
  if (e == 3) {
    for (int k = 0; k < n; ++k) data.tasks.push_back(kTasks[task_of(e, k)]);
  } else {
    data.tasks = {kTasks[task_of(e, 0)]};
  }
  return data;
}

WriterOptions fast_options() {
  WriterOptions options;
  options.video.codec = "libx264";  // faster than libsvtav1 at these sizes; decoding is what we test
  return options;
}

fs::path write_test_dataset(const fs::path& root, WriterOptions options = fast_options(), bool video = true,
                            bool image = true) {
  DatasetWriter writer(root, kFps, test_features(video, image), options);
  for (int e = 0; e < static_cast<int>(kLengths.size()); ++e) writer.add_episode(test_episode(e, video, image));
  CHECK(writer.episodes_written() == 4);
  writer.finish();
  return root;
}

// (episode, frame) of a global index.
std::pair<int, int> locate(int64_t index) {
  for (int e = 0; e < static_cast<int>(kLengths.size()); ++e) {
    if (index < episode_from(e) + kLengths[e]) return {e, static_cast<int>(index - episode_from(e))};
  }
  FAIL("index out of range");
  return {};
}

std::vector<int64_t> shape_of(const torch::Tensor& t) {
  return t.sizes().vec();
}

// Largest |decoded - written| over a video frame.
int max_diff(const torch::Tensor& decoded, const torch::Tensor& written) {
  return (decoded.to(torch::kInt) - written.to(torch::kInt)).abs().max().item<int>();
}
// Index of the frame of episode e whose written colour is nearest the decoded frame.
int nearest_frame(const torch::Tensor& decoded, int e) {
  int best = -1;
  double best_diff = 1e9;
  for (int k = 0; k < kLengths[e]; ++k) {
    double diff = (decoded.to(torch::kFloat) - cam_frame_chw(e, k).to(torch::kFloat)).abs().mean().item<double>();
    if (diff < best_diff) best_diff = diff, best = k;
  }
  return best;
}
// Codec tolerance for the flat-colour frames with libx264 crf 30 yuv420p: every pixel within 6 levels
// (observed: <= 2). Consecutive frames differ by 12 levels in red and 15 in blue, so a frame within
// tolerance also identifies itself.
constexpr int kVideoTolerance = 6;

// Checks every item of a dataset opened on the full test dataset.
void check_all_items(const LeRobotDataset& dataset, bool video, bool image) {
  ReadContext context;
  REQUIRE(dataset.size() == kTotal);
  for (int64_t i = 0; i < kTotal; ++i) {
    CAPTURE(i);
    auto [e, k] = locate(i);
    Sample item = dataset.get(i, context);
    // numeric features, exact
    REQUIRE(item.count("observation.state"));
    CHECK(shape_of(item.at("observation.state")) == std::vector<int64_t>{3});
    CHECK((item.at("observation.state").scalar_type() == torch::kFloat));
    for (int j = 0; j < 3; ++j) CHECK(item.at("observation.state")[j].item<float>() == state_value(e, k, j));
    CHECK(shape_of(item.at("action")) == std::vector<int64_t>{2});
    for (int j = 0; j < 2; ++j) CHECK(item.at("action")[j].item<float>() == action_value(e, k, j));
    CHECK(shape_of(item.at("grid")) == std::vector<int64_t>{2, 2});
    for (int q = 0; q < 4; ++q) CHECK(item.at("grid")[q / 2][q % 2].item<float>() == grid_value(e, k, q));
    CHECK(shape_of(item.at("counter")).empty());
    CHECK((item.at("counter").scalar_type() == torch::kLong));
    CHECK(item.at("counter").item<int64_t>() == counter_value(e, k));
    // default columns
    for (const char* key : {"timestamp", "frame_index", "episode_index", "index", "task_index"})
      CHECK_MESSAGE(shape_of(item.at(key)).empty(), key);
    CHECK((item.at("timestamp").scalar_type() == torch::kFloat));
    CHECK(item.at("timestamp").item<float>() == static_cast<float>(static_cast<double>(k) / kFps));
    CHECK(item.at("frame_index").item<int64_t>() == k);
    CHECK(item.at("episode_index").item<int64_t>() == e);
    CHECK(item.at("index").item<int64_t>() == i);
    CHECK(item.at("task_index").item<int64_t>() == task_of(e, k));
    CHECK(dataset.meta().task(item.at("task_index").item<int64_t>()) == kTasks[task_of(e, k)]);
    // no window was asked for: no padding masks
    CHECK(item.count("action_is_pad") == 0);
    if (image) {
      const torch::Tensor& img = item.at(kImageKey);
      CHECK(shape_of(img) == std::vector<int64_t>{3, kImg, kImg});
      CHECK((img.scalar_type() == torch::kUInt8));
      CHECK(torch::equal(img, image_frame_hwc(e, k).permute({2, 0, 1})));
    } else {
      CHECK(item.count(kImageKey) == 0);
    }
    if (video) {
      const torch::Tensor& cam = item.at(kVideoKey);
      CHECK(shape_of(cam) == std::vector<int64_t>{3, kCam, kCam});
      CHECK((cam.scalar_type() == torch::kUInt8));
      CHECK(max_diff(cam, cam_frame_chw(e, k)) <= kVideoTolerance);
      CHECK(nearest_frame(cam, e) == k);
    }
  }
  CHECK(dataset.column("action").size(0) == kTotal);
  CHECK(torch::equal(dataset.column("index"), torch::arange(kTotal, torch::kLong)));
}

// Rewrites meta/episodes/chunk-000/file-000.parquet with the columns the reader needs (stats dropped),
// letting `edit` change the from_timestamp of each video key.
void rewrite_episode_timestamps(const fs::path& root, const std::vector<std::string>& video_keys,
                                const std::function<void(const std::string&, torch::Tensor&)>& edit) {
  fs::path file = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet";
  std::vector<ParquetColumn> columns;
  {
    ParquetReader reader(file);
    for (const char* name :
         {"episode_index", "length", "data/chunk_index", "data/file_index", "dataset_from_index", "dataset_to_index"})
      columns.push_back(ParquetColumn::tensor(name, reader.read_tensor_cast(name, torch::kLong).contiguous()));
    columns.push_back(ParquetColumn::string_list("tasks", reader.read_string_lists("tasks")));
    for (const std::string& key : video_keys) {
      std::string prefix = "videos/" + key + "/";
      for (const char* name : {"chunk_index", "file_index"})
        columns.push_back(
            ParquetColumn::tensor(prefix + name, reader.read_tensor_cast(prefix + name, torch::kLong).contiguous()));
      torch::Tensor from = reader.read_tensor_cast(prefix + "from_timestamp", torch::kDouble).clone();
      edit(key, from);
      columns.push_back(ParquetColumn::tensor(prefix + "from_timestamp", from.contiguous()));
      columns.push_back(ParquetColumn::tensor(
          prefix + "to_timestamp", reader.read_tensor_cast(prefix + "to_timestamp", torch::kDouble).contiguous()));
    }
  }
  fs::remove(file);
  ParquetWriter writer(file);
  writer.write_row_group(columns);
  writer.close();
}

}  // namespace

// =================================================================================================
TEST_CASE("dataset: round trip in one data file and one video file (from_timestamp offsets)") {
  TempDir tmp;
  fs::path root = write_test_dataset(tmp.path / "ds");
  LeRobotDataset dataset(root);
  const DatasetMeta& meta = dataset.meta();

  // everything in data/chunk-000/file-000.parquet, one row group per episode
  CHECK(fs::exists(root / "data" / "chunk-000" / "file-000.parquet"));
  CHECK_FALSE(fs::exists(root / "data" / "chunk-000" / "file-001.parquet"));
  {
    ParquetReader reader(root / "data" / "chunk-000" / "file-000.parquet");
    CHECK(reader.num_rows() == kTotal);
    CHECK(reader.num_row_groups() == 4);
    CHECK_FALSE(reader.has_column(kVideoKey));  // videos are not data columns
    CHECK(reader.has_column(kImageKey));
  }
  CHECK(fs::exists(root / "videos" / kVideoKey / "chunk-000" / "file-000.mp4"));
  CHECK_FALSE(fs::exists(root / "videos" / kVideoKey / "chunk-000" / "file-001.mp4"));
  CHECK(fs::exists(root / "meta" / "tasks.parquet"));
  CHECK(fs::exists(root / "meta" / "stats.json"));

  REQUIRE(meta.episodes.size() == 4);
  CHECK(meta.tasks == kTasks);
  for (int e = 0; e < 4; ++e) {
    CAPTURE(e);
    const Episode& episode = meta.episodes[e];
    CHECK(episode.index == e);
    CHECK(episode.length == kLengths[e]);
    CHECK(episode.from_index == episode_from(e));
    CHECK(episode.to_index == episode_from(e) + kLengths[e]);
    CHECK(episode.data_chunk == 0);
    CHECK(episode.data_file == 0);
    const EpisodeVideo& video = episode.videos.at(kVideoKey);
    CHECK(video.chunk_index == 0);
    CHECK(video.file_index == 0);
    CHECK(video.from_timestamp == static_cast<double>(episode_from(e)) / kFps);
    CHECK(video.to_timestamp == static_cast<double>(episode_from(e) + kLengths[e]) / kFps);
  }
  CHECK(meta.episodes[0].tasks == std::vector<std::string>{kTasks[0]});
  CHECK(meta.episodes[1].tasks == std::vector<std::string>{kTasks[1]});
  CHECK(meta.episodes[3].tasks == std::vector<std::string>{kTasks[0], kTasks[2]});

  check_all_items(dataset, true, true);

  // Frame k of episode e sits at exactly from_timestamp + k/fps in the file, and get() returns it.
  VideoReader reader(meta.video_file(meta.episodes[2], kVideoKey));
  ReadContext context;
  for (int e = 0; e < 4; ++e) {
    for (int k = 0; k < kLengths[e]; ++k) {
      double t = meta.episodes[e].videos.at(kVideoKey).from_timestamp + static_cast<double>(k) / kFps;
      std::vector<double> found;
      torch::Tensor frame = reader.frames_at(std::vector<double>{t}, 1e-9, &found);
      CHECK(found.at(0) == doctest::Approx(t).epsilon(1e-12));
      CHECK(torch::equal(frame[0], dataset.get(episode_from(e) + k, context).at(kVideoKey)));
    }
  }

  // stats.json: numeric means over all frames
  REQUIRE(meta.stats.has_value());
  const FeatureStats& state_stats = meta.stats->at("observation.state");
  for (int j = 0; j < 3; ++j) {
    double sum = 0, lo = 1e9, hi = -1e9;
    for (int e = 0; e < 4; ++e)
      for (int k = 0; k < kLengths[e]; ++k) {
        sum += state_value(e, k, j);
        lo = std::min<double>(lo, state_value(e, k, j));
        hi = std::max<double>(hi, state_value(e, k, j));
      }
    CHECK(state_stats.mean[j].item<double>() == doctest::Approx(sum / kTotal).epsilon(1e-9));
    CHECK(state_stats.min[j].item<double>() == lo);
    CHECK(state_stats.max[j].item<double>() == hi);
  }
  CHECK(state_stats.count.to(torch::kLong).item<int64_t>() == kTotal);
  CHECK(shape_of(meta.stats->at(kVideoKey).mean) == std::vector<int64_t>{3, 1, 1});

  CHECK_HAS(error_of<util::DataError>([&] { dataset.get(kTotal, context); }), "dataset index 24 is out of range 0..23");
  CHECK_HAS(error_of<util::DataError>([&] { dataset.get(-1, context); }), "out of range");
}

TEST_CASE("dataset: round trip across data/video files and chunks (rollover)") {
  TempDir tmp;
  WriterOptions options = fast_options();
  options.data_file_bytes = 1;   // every episode starts a new data file
  options.video_file_bytes = 1;  // and a new video file
  options.chunks_size = 2;       // two files per chunk: episodes 2, 3 land in chunk-001
  fs::path root = write_test_dataset(tmp.path / "ds", options);

  for (int e = 0; e < 4; ++e) {
    CAPTURE(e);
    std::string chunk = "chunk-00" + std::to_string(e / 2), file = "file-00" + std::to_string(e % 2);
    fs::path data = root / "data" / chunk / (file + ".parquet");
    REQUIRE(fs::exists(data));
    CHECK(ParquetReader(data).num_rows() == kLengths[e]);
    CHECK(fs::exists(root / "videos" / kVideoKey / chunk / (file + ".mp4")));
  }
  CHECK_FALSE(fs::exists(root / "data" / "chunk-000" / "file-002.parquet"));
  CHECK_FALSE(fs::exists(root / "data" / "chunk-002"));

  LeRobotDataset dataset(root);
  const DatasetMeta& meta = dataset.meta();
  CHECK(meta.info.chunks_size == 2);
  for (int e = 0; e < 4; ++e) {
    CAPTURE(e);
    const Episode& episode = meta.episodes[e];
    CHECK(episode.data_chunk == e / 2);
    CHECK(episode.data_file == e % 2);
    CHECK(meta.data_file(episode) ==
          root / ("data/chunk-00" + std::to_string(e / 2) + "/file-00" + std::to_string(e % 2) + ".parquet"));
    const EpisodeVideo& video = episode.videos.at(kVideoKey);
    CHECK(video.chunk_index == e / 2);
    CHECK(video.file_index == e % 2);
    CHECK(video.from_timestamp == 0.0);  // each episode starts its own file
    CHECK(video.to_timestamp == static_cast<double>(kLengths[e]) / kFps);
    CHECK(meta.video_file(episode, kVideoKey) == root / "videos" / kVideoKey / ("chunk-00" + std::to_string(e / 2)) /
                                                     ("file-00" + std::to_string(e % 2) + ".mp4"));
  }
  check_all_items(dataset, true, true);

  // Subset reading only the files of the chosen episodes, in any order given.
  DatasetOptions options_subset;
  options_subset.episodes = std::vector<int64_t>{3, 0};
  LeRobotDataset subset(root, options_subset);
  CHECK(subset.size() == kLengths[0] + kLengths[3]);
  ReadContext context;
  Sample item = subset.get(kLengths[0], context);
  CHECK(item.at("index").item<int64_t>() == episode_from(3));
  CHECK(nearest_frame(item.at(kVideoKey), 3) == 0);
}

TEST_CASE("dataset: keys selection and datasets without cameras") {
  TempDir tmp;
  fs::path root = write_test_dataset(tmp.path / "ds", fast_options(), false, false);
  LeRobotDataset dataset(root);
  check_all_items(dataset, false, false);
  CHECK_FALSE(dataset.meta().info.video_path.has_value());  // written as null without videos
  CHECK(read_json(root / "meta" / "info.json").at("video_path").is_null());

  DatasetOptions options;
  options.keys = std::vector<std::string>{"action"};
  LeRobotDataset only_action(root, options);
  ReadContext context;
  Sample item = only_action.get(3, context);
  CHECK(item.count("action") == 1);
  CHECK(item.count("observation.state") == 0);
  CHECK(item.count("index") == 1);  // index columns always come along
  options.keys = std::vector<std::string>{"nope"};
  CHECK_HAS(error_of<util::DataError>([&] { LeRobotDataset bad(root, options); }), "no feature 'nope'");
  options.keys = std::vector<std::string>{"action"};
  options.delta_timestamps = {{"observation.state", {0.0}}};
  CHECK_HAS(error_of<util::ConfigError>([&] { LeRobotDataset bad(root, options); }), "observation.state");
}

TEST_CASE("dataset: episode subset") {
  TempDir tmp;
  fs::path root = write_test_dataset(tmp.path / "ds", fast_options(), false, true);
  DatasetOptions options;
  options.episodes = std::vector<int64_t>{3, 1, 3};  // duplicates and order do not matter
  options.delta_timestamps = {{"action", {-0.2, -0.1, 0.0, 0.1, 0.3}}};
  LeRobotDataset dataset(root, options);
  CHECK(dataset.episode_indices() == std::vector<int64_t>{1, 3});
  REQUIRE(dataset.size() == kLengths[1] + kLengths[3]);
  CHECK(dataset.column("action").size(0) == dataset.size());
  ReadContext context;
  const std::vector<int64_t> offsets{-2, -1, 0, 1, 3};
  for (int64_t i = 0; i < dataset.size(); ++i) {
    CAPTURE(i);
    int e = i < kLengths[1] ? 1 : 3;
    int k = static_cast<int>(e == 1 ? i : i - kLengths[1]);
    Sample item = dataset.get(i, context);
    CHECK(item.at("index").item<int64_t>() == episode_from(e) + k);
    CHECK(item.at("episode_index").item<int64_t>() == e);
    CHECK(item.at("frame_index").item<int64_t>() == k);
    CHECK(item.at("observation.state")[0].item<float>() == state_value(e, k, 0));
    CHECK(torch::equal(item.at(kImageKey), image_frame_hwc(e, k).permute({2, 0, 1})));
    // windows clamp to the episode, never reaching into episode 2 or 0
    const torch::Tensor& window = item.at("action");
    REQUIRE(shape_of(window) == std::vector<int64_t>{5, 2});
    for (int t = 0; t < 5; ++t) {
      int target = k + static_cast<int>(offsets[t]);
      int clamped = std::clamp(target, 0, static_cast<int>(kLengths[e]) - 1);
      CHECK(window[t][1].item<float>() == action_value(e, clamped, 1));
      CHECK(item.at("action_is_pad")[t].item<bool>() == (target < 0 || target >= kLengths[e]));
    }
  }
  CHECK_HAS(error_of<util::DataError>([&] { dataset.get(dataset.size(), context); }), "out of range");

  options.delta_timestamps.clear();
  options.episodes = std::vector<int64_t>{1, 7};
  std::string message = error_of<util::DataError>([&] { LeRobotDataset bad(root, options); });
  CHECK_HAS(message, "episode 7 is out of range");
  CHECK_HAS(message, "0..3");
  options.episodes = std::vector<int64_t>{-1};
  CHECK_HAS(error_of<util::DataError>([&] { LeRobotDataset bad(root, options); }), "episode -1 is out of range");
  options.episodes = std::vector<int64_t>{};
  CHECK_HAS(error_of<util::ConfigError>([&] { LeRobotDataset bad(root, options); }), "episodes is empty");
}

TEST_CASE("dataset: delta windows") {
  TempDir tmp;
  fs::path root = write_test_dataset(tmp.path / "ds");
  DatasetOptions options;
  options.delta_timestamps = {
      {"action", {-0.2, -0.1, 0.0, 0.1, 0.3}}, {kVideoKey, {-0.1, 0.0}}, {kImageKey, {0.0, 0.2}}, {"counter", {-0.1}}};
  LeRobotDataset dataset(root, options);
  CHECK(dataset.delta_indices().at("action") == std::vector<int64_t>{-2, -1, 0, 1, 3});
  CHECK(dataset.delta_indices().at(kVideoKey) == std::vector<int64_t>{-1, 0});
  ReadContext context;
  auto expect_window = [](int k, int length, int64_t offset, int& clamped) {
    int target = k + static_cast<int>(offset);
    clamped = std::clamp(target, 0, length - 1);
    return target < 0 || target >= length;
  };
  for (int64_t i = 0; i < kTotal; ++i) {  // every frame: first, last and middle frames of each episode
    CAPTURE(i);
    auto [e, k] = locate(i);
    const int length = static_cast<int>(kLengths[e]);
    Sample item = dataset.get(i, context);
    // action [5, 2]
    const torch::Tensor& action = item.at("action");
    REQUIRE(shape_of(action) == std::vector<int64_t>{5, 2});
    REQUIRE(shape_of(item.at("action_is_pad")) == std::vector<int64_t>{5});
    CHECK((item.at("action_is_pad").scalar_type() == torch::kBool));
    for (int t = 0; t < 5; ++t) {
      int clamped = 0;
      bool pad = expect_window(k, length, dataset.delta_indices().at("action")[t], clamped);
      CHECK(item.at("action_is_pad")[t].item<bool>() == pad);
      for (int j = 0; j < 2; ++j) CHECK(action[t][j].item<float>() == action_value(e, clamped, j));
    }
    // scalar feature with a window: [1]
    REQUIRE(shape_of(item.at("counter")) == std::vector<int64_t>{1});
    CHECK(item.at("counter")[0].item<int64_t>() == counter_value(e, std::max(k - 1, 0)));
    CHECK(item.at("counter_is_pad")[0].item<bool>() == (k == 0));
    // unwindowed features stay single frames
    CHECK(shape_of(item.at("observation.state")) == std::vector<int64_t>{3});
    CHECK(item.count("observation.state_is_pad") == 0);
    // video window [2, 3, H, W]
    const torch::Tensor& cam = item.at(kVideoKey);
    REQUIRE(shape_of(cam) == std::vector<int64_t>{2, 3, kCam, kCam});
    for (int t = 0; t < 2; ++t) {
      int clamped = 0;
      bool pad = expect_window(k, length, dataset.delta_indices().at(kVideoKey)[t], clamped);
      CHECK(item.at(std::string(kVideoKey) + "_is_pad")[t].item<bool>() == pad);
      CHECK(max_diff(cam[t], cam_frame_chw(e, clamped)) <= kVideoTolerance);
      CHECK(nearest_frame(cam[t], e) == clamped);
    }
    // image window [2, 3, h, w], exact
    const torch::Tensor& img = item.at(kImageKey);
    REQUIRE(shape_of(img) == std::vector<int64_t>{2, 3, kImg, kImg});
    for (int t = 0; t < 2; ++t) {
      int clamped = 0;
      bool pad = expect_window(k, length, dataset.delta_indices().at(kImageKey)[t], clamped);
      CHECK(item.at(std::string(kImageKey) + "_is_pad")[t].item<bool>() == pad);
      CHECK(torch::equal(img[t], image_frame_hwc(e, clamped).permute({2, 0, 1})));
    }
  }
  // spot checks written out: last frame of episode 1 (global 13, k = 8 of 9)
  Sample last = dataset.get(13, context);
  CHECK(torch::equal(last.at("action_is_pad"), torch::tensor({false, false, false, true, true})));
  CHECK(last.at("action")[4][0].item<float>() == action_value(1, 8, 0));
  Sample first = dataset.get(14, context);  // first frame of episode 2 (length 3)
  CHECK(torch::equal(first.at("action_is_pad"), torch::tensor({true, true, false, false, true})));
  CHECK(first.at("action")[0][0].item<float>() == action_value(2, 0, 0));
  CHECK(first.at("action")[4][0].item<float>() == action_value(2, 2, 0));

  // window_query directly
  WindowQuery query = window_query(10, 5, 14, {-6, 0, 3, 4, 5});
  CHECK(query.indices == std::vector<int64_t>{5, 10, 13, 13, 13});
  CHECK(torch::equal(query.is_pad, torch::tensor({true, false, false, true, true})));

  // offsets within tolerance of k/fps are accepted and rounded
  DatasetInfo info = dataset.meta().info;
  CHECK(resolve_delta_timestamps({{"action", {0.10000001, -0.29999999}}}, info, 1e-4).at("action") ==
        std::vector<int64_t>{1, -3});
  // not multiples of 1/fps: ConfigError naming the key and the offending offsets only
  std::string message = error_of<util::ConfigError>([&] {
    resolve_delta_timestamps({{"action", {0.0, 0.05, 0.1, 0.27}}}, info, 1e-4);
  });
  CHECK_HAS(message, "delta_timestamps['action']");
  CHECK_HAS(message, "0.05");
  CHECK_HAS(message, "0.27");
  CHECK_HAS(message, "1/10");
  CHECK_FALSE(contains(message.substr(0, message.find("||")), "0.1 "));
  options.delta_timestamps = {{"observation.state", {0.0, 0.15}}};
  message = error_of<util::ConfigError>([&] { LeRobotDataset bad(root, options); });
  CHECK_HAS(message, "observation.state");
  CHECK_HAS(message, "0.15");
  // a larger tolerance accepts 0.15 s at 10 fps? |1.5 - 2| / 10 = 0.05 > 0.01: still refused
  CHECK_THROWS_AS(resolve_delta_timestamps({{"action", {0.15}}}, info, 0.01), util::ConfigError);
  CHECK(resolve_delta_timestamps({{"action", {0.101}}}, info, 0.01).at("action") == std::vector<int64_t>{1});
  // NaN, infinite and absurd offsets are refused, not turned into INT64_MIN frame offsets
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1e300}) {
    CAPTURE(bad);
    CHECK_HAS(error_of<util::ConfigError>([&] {
                resolve_delta_timestamps({{"action", {0.0, bad}}}, info, 1e-4);
              }),
              "delta_timestamps['action']");
  }
  // unknown key: error listing the features
  options.delta_timestamps = {{"observation.nope", {0.0}}};
  message = error_of<util::DataError>([&] { LeRobotDataset bad(root, options); });
  CHECK_HAS(message, "observation.nope");
  CHECK_HAS(message, "observation.state");
  CHECK_HAS(message, "action");
  // empty offset list
  options.delta_timestamps = {{"action", {}}};
  CHECK_HAS(error_of<util::ConfigError>([&] { LeRobotDataset bad(root, options); }), "action");
}

TEST_CASE("dataset: info.json fields") {
  TempDir tmp;
  WriterOptions options = fast_options();
  options.robot_type = "test_arm";
  fs::path root = write_test_dataset(tmp.path / "ds", options);

  ojson raw = read_json(root / "meta" / "info.json");
  std::vector<std::string> top_keys;
  for (const auto& [key, value] : raw.items()) top_keys.push_back(key);
  CHECK(top_keys == std::vector<std::string>{"codebase_version", "robot_type", "total_episodes", "total_frames",
                                             "total_tasks", "chunks_size", "data_files_size_in_mb",
                                             "video_files_size_in_mb", "fps", "splits", "data_path", "video_path",
                                             "features"});

  DatasetInfo info = DatasetInfo::read(root / "meta" / "info.json");
  // A folder without it: the hint names the file a LeRobot dataset needs.
  CHECK_HAS(lrhost::test::described_error<lrhost::util::IoError>([&] { DatasetInfo::read(tmp.path / "nothing.json"); }),
            "(it needs meta/info.json)");
  CHECK(info.codebase_version == "v3.0");
  CHECK(info.version_major == 3);
  CHECK(info.version_minor == 0);
  CHECK_FALSE(info.is_v2());
  CHECK(info.fps == kFps);
  CHECK(info.total_episodes == 4);
  CHECK(info.total_frames == kTotal);
  CHECK(info.total_tasks == 3);
  CHECK(info.chunks_size == 1000);
  CHECK(info.data_files_size_in_mb == 100);
  CHECK(info.video_files_size_in_mb == 200);
  CHECK(info.robot_type == std::optional<std::string>("test_arm"));
  CHECK(info.splits == ojson{{"train", "0:4"}});
  CHECK(info.data_path == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet");
  CHECK(info.video_path ==
        std::optional<std::string>("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"));
  std::vector<std::string> keys;
  for (const auto& feature : info.features) keys.push_back(feature.key);
  CHECK(keys == std::vector<std::string>{"observation.state", "action", "grid", "counter", kVideoKey, kImageKey,
                                         "timestamp", "frame_index", "episode_index", "index", "task_index"});
  CHECK(info.camera_keys() == std::vector<std::string>{kVideoKey, kImageKey});
  CHECK(info.keys_of(FeatureKind::Video) == std::vector<std::string>{kVideoKey});

  const FeatureSpec& state = info.feature("observation.state");
  CHECK((state.kind == FeatureKind::Numeric));
  CHECK((state.scalar_type == torch::kFloat));
  CHECK(state.shape == std::vector<int64_t>{3});
  CHECK(state.item_shape() == std::vector<int64_t>{3});
  CHECK(state.names == ojson::array({"x", "y", "z"}));
  CHECK(info.feature("grid").item_shape() == std::vector<int64_t>{2, 2});
  const FeatureSpec& counter = info.feature("counter");
  CHECK((counter.scalar_type == torch::kLong));
  CHECK(counter.shape == std::vector<int64_t>{1});
  CHECK(counter.item_shape().empty());
  CHECK((info.feature("timestamp").scalar_type == torch::kFloat));
  CHECK(info.feature("timestamp").item_shape().empty());
  CHECK(info.feature("index").dtype == "int64");
  CHECK(info.feature("index").names.is_null());

  const FeatureSpec& cam = info.feature(kVideoKey);
  CHECK((cam.kind == FeatureKind::Video));
  CHECK(cam.is_camera());
  CHECK((cam.scalar_type == torch::kByte));
  CHECK(cam.shape == std::vector<int64_t>{kCam, kCam, 3});
  CHECK(cam.names == ojson::array({"height", "width", "channels"}));
  CHECK(cam.chw_shape() == std::vector<int64_t>{3, kCam, kCam});
  CHECK(cam.item_shape() == std::vector<int64_t>{3, kCam, kCam});
  CHECK(cam.info.at("video.codec") == "h264");
  CHECK(cam.info.at("video.height") == kCam);
  CHECK(cam.info.at("video.width") == kCam);
  CHECK(cam.info.at("video.fps") == kFps);
  CHECK(cam.info.at("video.pix_fmt") == "yuv420p");
  CHECK(cam.info.at("has_audio") == false);
  const FeatureSpec& img = info.feature(kImageKey);
  CHECK((img.kind == FeatureKind::Image));
  CHECK(img.chw_shape() == std::vector<int64_t>{3, kImg, kImg});
  CHECK(img.info.is_null());

  // chw_shape follows the names: legacy "channel" permutes, channel-first names do not.
  FeatureSpec legacy = cam;
  legacy.shape = {48, 64, 3};
  legacy.names = ojson::array({"height", "width", "channel"});
  CHECK(legacy.chw_shape() == std::vector<int64_t>{3, 48, 64});
  legacy.shape = {3, 48, 64};
  legacy.names = ojson::array({"channels", "height", "width"});
  CHECK(legacy.chw_shape() == std::vector<int64_t>{3, 48, 64});

  // to_json writes LeRobot's order back
  CHECK(info.to_json().dump() == raw.dump());

  CHECK_HAS(error_of<util::DataError>([&] { info.feature("nope"); }), "observation.state");
  CHECK(info.find_feature("nope") == nullptr);
  CHECK(default_feature_keys() ==
        std::vector<std::string>{"timestamp", "frame_index", "episode_index", "index", "task_index"});

  // unknown top-level keys: a warning naming the key, not an error; minor version above 3.0 warns too
  edit_info(root, [](ojson& j) {
    j["my_extra_key"] = 42;
    j["codebase_version"] = "v3.1";
  });
  {
    LogCapture log;
    DatasetInfo relaxed = DatasetInfo::read(root / "meta" / "info.json");
    CHECK(relaxed.extra.at("my_extra_key") == 42);
    CHECK(relaxed.version_minor == 1);
    CHECK_HAS(log.text(), "my_extra_key");
    CHECK_HAS(log.text(), "v3.1");
    LeRobotDataset dataset(root);
    CHECK(dataset.size() == kTotal);
  }
}

TEST_CASE("dataset: metadata errors name the file and what was expected") {
  TempDir tmp;
  fs::path root = write_test_dataset(tmp.path / "ds", fast_options(), false, true);
  const fs::path info_file = root / "meta" / "info.json";
  const std::string pristine = read_json(info_file).dump(4);
  auto restore = [&] { write_text(info_file, pristine); };
  std::string message;

  // missing root
  message = error_of<util::IoError>([&] { LeRobotDataset bad(tmp.path / "nowhere"); });
  CHECK_HAS(message, (tmp.path / "nowhere").string());
  CHECK_HAS(message, "does not exist");
  // root without meta/info.json
  fs::create_directories(tmp.path / "empty");
  message = error_of<util::IoError>([&] { LeRobotDataset bad(tmp.path / "empty"); });
  CHECK_HAS(message, (tmp.path / "empty" / "meta" / "info.json").string());
  CHECK_HAS(message, "meta/info.json");
  // bad JSON
  write_text(info_file, "{\"codebase_version\": \"v3.0\", \"fps\": ");
  message = error_of<util::IoError>([&] { LeRobotDataset bad(root); });
  CHECK_HAS(message, info_file.string());
  CHECK_HAS(message, "not valid JSON");
  // a number beyond double (nlohmann's out_of_range, not a parse_error; same bug class as the
  // stats.json finding of tests/fuzz)
  write_text(info_file, "{\"codebase_version\": \"v3.0\", \"fps\": 1e999999}");
  message = error_of<util::IoError>([&] { LeRobotDataset bad(root); });
  CHECK_HAS(message, info_file.string());
  CHECK_HAS(message, "not valid JSON");
  write_text(info_file, "[1, 2]");
  CHECK_HAS(error_of<util::DataError>([&] { LeRobotDataset bad(root); }), "must hold a JSON object");
  restore();

  auto info_error = [&](const std::function<void(ojson&)>& edit) {
    restore();
    edit_info(root, edit);
    std::string text = error_of<util::Error>([&] { LeRobotDataset bad(root); });
    restore();
    return text;
  };
  // versions
  message = info_error([](ojson& j) { j["codebase_version"] = "v2.0"; });
  CHECK_HAS(message, info_file.string());
  CHECK_HAS(message, "v2.0");
  CHECK_HAS(message, "too old");
  CHECK_HAS(message, "convert");
  message = info_error([](ojson& j) { j["codebase_version"] = "v4.0"; });
  CHECK_HAS(message, info_file.string());
  CHECK_HAS(message, "v4.0 is not supported");
  message = info_error([](ojson& j) { j["codebase_version"] = "3.0"; });
  CHECK_HAS(message, "vMAJOR.MINOR");
  message = info_error([](ojson& j) { j["codebase_version"] = 3; });
  CHECK_HAS(message, "'codebase_version' must be a string");
  // required keys and types
  message = info_error([](ojson& j) { j.erase("fps"); });
  CHECK_HAS(message, info_file.string());
  CHECK_HAS(message, "has no 'fps'");
  message = info_error([](ojson& j) { j["fps"] = "ten"; });
  CHECK_HAS(message, "'fps' must be a positive integer, got \"ten\"");
  message = info_error([](ojson& j) { j["fps"] = 29.97; });  // not silently read as 29
  CHECK_HAS(message, "'fps' must be a positive integer, got 29.97");
  message = info_error([](ojson& j) { j["total_frames"] = 24.5; });
  CHECK_HAS(message, "'total_frames' must be an integer, got 24.5");
  message = info_error([](ojson& j) { j["fps"] = 0; });
  CHECK_HAS(message, "fps must be positive");
  message = info_error([](ojson& j) { j["total_frames"] = "many"; });
  CHECK_HAS(message, "'total_frames' must be an integer");
  message = info_error([](ojson& j) { j["chunks_size"] = 0; });
  CHECK_HAS(message, "chunks_size must be positive");
  message = info_error([](ojson& j) { j["features"].erase("index"); });
  CHECK_HAS(message, "feature 'index' is missing");
  message = info_error([](ojson& j) { j["features"]["action"]["dtype"] = "complex128"; });
  CHECK_HAS(message, "feature 'action'");
  CHECK_HAS(message, "unsupported dtype 'complex128'");
  message = info_error([](ojson& j) { j["features"]["action"]["shape"] = {2, -1}; });
  CHECK_HAS(message, "feature 'action'");
  CHECK_HAS(message, "non-negative integers");
  message = info_error([](ojson& j) { j["features"][kImageKey]["shape"] = {16, 16}; });
  CHECK_HAS(message, "[height, width, channels]");
  message = info_error([](ojson& j) { j["features"]["action"] = 5; });
  CHECK_HAS(message, "feature 'action' must be an object");
  message = info_error([](ojson& j) {
    j["features"]["cam2"] = {{"dtype", "video"}, {"shape", {8, 8, 3}}, {"names", {"height", "width", "channels"}}};
    j["video_path"] = nullptr;
  });
  CHECK_HAS(message, "video_path is null");

  // totals that disagree with meta/episodes
  message = info_error([](ojson& j) { j["total_frames"] = kTotal + 1; });
  CHECK_HAS(message, info_file.string());
  CHECK_HAS(message, "total_frames=25");
  CHECK_HAS(message, "add up to 24");
  message = info_error([](ojson& j) { j["total_episodes"] = 3; });
  CHECK_HAS(message, info_file.string());
  CHECK_HAS(message, "total_episodes=3");
  CHECK_HAS(message, "lists 4");
  message = info_error([](ojson& j) { j["total_tasks"] = 5; });
  CHECK_HAS(message, "total_tasks=5");
  CHECK_HAS(message, "has 3");

  // path templates in info.json
  message = info_error([](ojson& j) { j["data_path"] = "data/{unknown}/file-{file_index:03d}.parquet"; });
  CHECK_HAS(message, "meta/info.json data_path");
  CHECK_HAS(message, "{unknown}");
  message = info_error([](ojson& j) { j["data_path"] = "data/chunk-{chunk_index:3x}/file.parquet"; });
  CHECK_HAS(message, "unsupported format spec '3x'");

  // a clean copy still loads after all the edits
  LeRobotDataset dataset(root);
  CHECK(dataset.size() == kTotal);
}

TEST_CASE("dataset: path templates") {
  std::map<std::string, TemplateValue> values{
      {"chunk_index", 7LL}, {"file_index", 1234LL}, {"video_key", std::string("cam")}};
  CHECK(expand_path_template("data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", values, "t") ==
        "data/chunk-007/file-1234.parquet");
  CHECK(expand_path_template("videos/{video_key}/{chunk_index}-{file_index:d}", values, "t") == "videos/cam/7-1234");
  CHECK(expand_path_template("{{literal}}/{chunk_index:06d}", values, "t") == "{literal}/000007");
  CHECK(expand_path_template("plain", values, "t") == "plain");
  CHECK(expand_path_template("episode_{chunk_index:010d}", values, "t") == "episode_0000000007");

  std::string message =
      error_of<util::DataError>([&] { expand_path_template("a/{unknown}/b", values, "the data path"); });
  CHECK_HAS(message, "the data path");
  CHECK_HAS(message, "{unknown}");
  CHECK_HAS(message, "a/{unknown}/b");
  message = error_of<util::DataError>([&] { expand_path_template("{chunk_index:x}", values, "what"); });
  CHECK_HAS(message, "unsupported format spec 'x'");
  CHECK_HAS(message, "{name:03d}");  // the hint shows the supported form
  CHECK_HAS(error_of<util::DataError>([&] { expand_path_template("{chunk_index:3d}", values, "w"); }), "'3d'");
  CHECK_HAS(error_of<util::DataError>([&] { expand_path_template("{chunk_index:0d}", values, "w"); }), "'0d'");
  CHECK_HAS(error_of<util::DataError>([&] { expand_path_template("{chunk_index:0xd}", values, "w"); }), "'0xd'");
  // a width that does not fit an int (or a sane path) is a format error, not std::out_of_range
  CHECK_HAS(error_of<util::DataError>([&] { expand_path_template("{chunk_index:099999999999d}", values, "w"); }),
            "unsupported format spec");
  CHECK_HAS(error_of<util::DataError>([&] { expand_path_template("{video_key:03d}", values, "w"); }), "string");
  CHECK_HAS(error_of<util::DataError>([&] { expand_path_template("a/{chunk_index", values, "w"); }), "unbalanced '{'");
  CHECK_HAS(error_of<util::DataError>([&] { expand_path_template("a}b", values, "w"); }), "unbalanced '}'");
}

TEST_CASE("dataset: broken data and video files") {
  TempDir tmp;
  fs::path root = write_test_dataset(tmp.path / "ds");
  const fs::path data_file = root / "data" / "chunk-000" / "file-000.parquet";
  const fs::path video_file = root / "videos" / kVideoKey / "chunk-000" / "file-000.mp4";
  std::string message;

  // video frames outside tolerance: shift episode 1's from_timestamp by half a frame
  fs::path episodes_file = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet";
  fs::path episodes_backup = tmp.path / "episodes_backup.parquet";
  fs::copy_file(episodes_file, episodes_backup);
  rewrite_episode_timestamps(root, {kVideoKey}, [](const std::string&, torch::Tensor& from) { from[1] += 0.05; });
  {
    LeRobotDataset dataset(root);  // meta loads; the mismatch shows when the frame is read
    CHECK(dataset.meta().episodes[1].videos.at(kVideoKey).from_timestamp == doctest::Approx(0.55));
    ReadContext context;
    CHECK(dataset.get(0, context).count(kVideoKey) == 1);  // episode 0 is fine
    message = error_of<util::DataError>([&] { dataset.get(episode_from(1) + 1, context); });
    CHECK_HAS(message, "episode 1");
    CHECK_HAS(message, kVideoKey);
    CHECK_HAS(message, "t=0.650000");  // 0.55 + frame 1 at 0.1 s
    CHECK_HAS(message, "tolerance_s");
    CHECK_HAS(message, video_file.string());
    // a tolerance wider than half a frame accepts it (nearest frame wins, as in LeRobot)
    DatasetOptions loose;
    loose.tolerance_s = 0.06;
    LeRobotDataset tolerant(root, loose);
    CHECK(tolerant.get(episode_from(1) + 1, context).count(kVideoKey) == 1);
  }
  fs::remove(episodes_file);
  fs::copy_file(episodes_backup, episodes_file);

  // changing fps in info.json alone does not move any frame time: timestamps come from the data
  // column and the video's own pts, so the dataset still reads within tolerance.
  edit_info(root, [](ojson& j) { j["fps"] = 20; });
  {
    LeRobotDataset dataset(root);
    ReadContext context;
    Sample item = dataset.get(1, context);
    CHECK(nearest_frame(item.at(kVideoKey), 0) == 1);
    // but delta windows now resolve in 1/20 s frames: 0.05 s is one frame
    DatasetOptions options;
    options.delta_timestamps = {{"action", {0.05}}};
    CHECK(LeRobotDataset(root, options).delta_indices().at("action") == std::vector<int64_t>{1});
  }
  edit_info(root, [](ojson& j) { j["fps"] = kFps; });

  // truncated mp4: get() fails with an error naming episode and camera, no crash
  {
    fs::path video_backup = tmp.path / "video_backup.mp4";
    fs::copy_file(video_file, video_backup);
    fs::resize_file(video_file, fs::file_size(video_file) / 2);
    LeRobotDataset dataset(root);
    ReadContext context;
    message = error_of<util::Error>([&] { dataset.get(kTotal - 1, context); });
    CHECK_HAS(message, "episode 3");
    CHECK_HAS(message, kVideoKey);
    // a truncated file cut inside its header cannot even be opened
    fs::resize_file(video_file, 100);
    ReadContext fresh;
    message = error_of<util::Error>([&] { dataset.get(0, fresh); });
    CHECK_HAS(message, "episode 0");
    CHECK_HAS(message, kVideoKey);
    // missing video file
    fs::remove(video_file);
    ReadContext fresh2;
    message = error_of<util::Error>([&] { dataset.get(0, fresh2); });
    CHECK_HAS(message, "episode 0");
    CHECK_HAS(message, video_file.string());
    fs::copy_file(video_backup, video_file);
  }

  // corrupt data parquet: an error naming the file at open
  {
    fs::path data_backup = tmp.path / "data_backup.parquet";
    fs::copy_file(data_file, data_backup);
    write_text(data_file, std::string(4096, 'x'));
    message = error_of<util::Error>([&] { LeRobotDataset bad(root); });
    CHECK_HAS(message, data_file.string());
    // missing data parquet
    fs::remove(data_file);
    message = error_of<util::IoError>([&] { LeRobotDataset bad(root); });
    CHECK_HAS(message, data_file.string());
    CHECK_HAS(message, "missing");
    fs::copy_file(data_backup, data_file);
  }
  // missing meta/tasks.parquet and meta/episodes
  fs::rename(root / "meta" / "tasks.parquet", tmp.path / "tasks.parquet");
  CHECK_HAS(error_of<util::Error>([&] { LeRobotDataset bad(root); }), "tasks.parquet");
  fs::rename(tmp.path / "tasks.parquet", root / "meta" / "tasks.parquet");
  fs::rename(episodes_file, tmp.path / "episodes.parquet");
  message = error_of<util::IoError>([&] { LeRobotDataset bad(root); });
  CHECK_HAS(message, "no episode metadata");
  CHECK_HAS(message, (root / "meta" / "episodes").string());
  fs::rename(tmp.path / "episodes.parquet", episodes_file);

  // everything restored: reads again
  LeRobotDataset dataset(root);
  ReadContext context;
  CHECK(nearest_frame(dataset.get(kTotal - 1, context).at(kVideoKey), 3) == kLengths[3] - 1);
}

TEST_CASE("dataset: writer refuses bad input") {
  TempDir tmp;
  fs::path root = tmp.path / "ds";
  write_text(root / "something.txt", "x");
  CHECK_HAS(error_of<util::IoError>([&] { DatasetWriter w(root, kFps, test_features(false, false)); }),
            "already exists and is not empty");
  CHECK_HAS(error_of<util::ConfigError>([&] { DatasetWriter w(tmp.path / "a", 0, test_features(false, false)); }),
            "fps must be positive");
  CHECK_HAS(error_of<util::ConfigError>([&] {
              DatasetWriter w(tmp.path / "b", kFps, {{"index", "int64", {1}, nullptr}});
            }),
            "added by the writer");
  CHECK_HAS(error_of<util::ConfigError>([&] {
              DatasetWriter w(tmp.path / "c", kFps, {{"a", "float32", {1}, nullptr}, {"a", "float32", {1}, nullptr}});
            }),
            "given twice");
  DatasetWriter writer(tmp.path / "d", kFps, test_features(false, false), fast_options());
  EpisodeData episode = test_episode(0, false, false);
  episode.values["action"] = torch::zeros({5, 3});
  CHECK_HAS(error_of<util::DataError>([&] { writer.add_episode(episode); }), "feature 'action' must be float32");
  episode = test_episode(0, false, false);
  episode.values.erase("grid");
  CHECK_HAS(error_of<util::DataError>([&] { writer.add_episode(episode); }), "feature 'grid' is missing");
  episode = test_episode(0, false, false);
  episode.values["action"] = torch::zeros({4, 2});
  CHECK_HAS(error_of<util::DataError>([&] { writer.add_episode(episode); }), "has 4 frames");
  episode = test_episode(0, false, false);
  episode.tasks = {"a", "b"};
  CHECK_HAS(error_of<util::DataError>([&] { writer.add_episode(episode); }), "one task for all frames");
  CHECK(writer.episodes_written() == 0);
  CHECK_HAS(error_of<util::DataError>([&] { writer.finish(); }), "no episodes");
}

// --- v2.1 -----------------------------------------------------------------------------------------
namespace {
// A v2.1 dataset built from parts: one parquet and one mp4 per episode, chunks_size 1 (so episode 1
// lives in chunk-001), meta/*.jsonl and info.json with total_chunks/total_videos, no stats.json.
const std::vector<int64_t> kV21Lengths{4, 6};
float v21_state(int e, int k, int j) {
  return static_cast<float>(e * 10 + k) + 0.5f * j;
}

void write_v21(const fs::path& root, int video_frames_of_episode1 = 6) {
  const int64_t total = kV21Lengths[0] + kV21Lengths[1];
  ojson info = {
      {"codebase_version", "v2.1"},
      {"robot_type", "koch"},
      {"total_episodes", 2},
      {"total_frames", total},
      {"total_tasks", 2},
      {"total_videos", 2},
      {"total_chunks", 2},
      {"chunks_size", 1},
      {"fps", kFps},
      {"splits", {{"train", "0:2"}}},
      {"data_path", "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"},
      {"video_path", "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"},
      {"features",
       {{"observation.state", {{"dtype", "float32"}, {"shape", ojson::array({2})}, {"names", {"a", "b"}}}},
        {kVideoKey,
         {{"dtype", "video"},
          {"shape", {kCam, kCam, 3}},
          {"names", {"height", "width", "channels"}},
          {"info", {{"video.fps", kFps}, {"video.codec", "h264"}}}}},
        {kImageKey, {{"dtype", "image"}, {"shape", {kImg, kImg, 3}}, {"names", {"height", "width", "channel"}}}},
        {"timestamp", {{"dtype", "float32"}, {"shape", ojson::array({1})}, {"names", nullptr}}},
        {"frame_index", {{"dtype", "int64"}, {"shape", ojson::array({1})}, {"names", nullptr}}},
        {"episode_index", {{"dtype", "int64"}, {"shape", ojson::array({1})}, {"names", nullptr}}},
        {"index", {{"dtype", "int64"}, {"shape", ojson::array({1})}, {"names", nullptr}}},
        {"task_index", {{"dtype", "int64"}, {"shape", ojson::array({1})}, {"names", nullptr}}}}}};
  write_text(root / "meta" / "info.json", info.dump(4));
  write_text(
      root / "meta" / "tasks.jsonl",
      "{\"task_index\": 0, \"task\": \"open the drawer\"}\n{\"task_index\": 1, \"task\": \"close the drawer\"}\n");
  write_text(root / "meta" / "episodes.jsonl",
             "{\"episode_index\": 0, \"tasks\": [\"open the drawer\"], \"length\": 4}\n"
             "{\"episode_index\": 1, \"tasks\": [\"close the drawer\"], \"length\": 6}\n");
  // per-episode stats of observation.state (min, max, mean, std, count), aggregated on load
  write_text(root / "meta" / "episodes_stats.jsonl",
             "{\"episode_index\": 0, \"stats\": {\"observation.state\": {\"min\": [0.0, 0.5], \"max\": [3.0, 3.5], "
             "\"mean\": [1.5, 2.0], \"std\": [1.0, 1.0], \"count\": [4]}}}\n"
             "{\"episode_index\": 1, \"stats\": {\"observation.state\": {\"min\": [10.0, 10.5], \"max\": [15.0, 15.5], "
             "\"mean\": [12.5, 13.0], \"std\": [2.0, 3.0], \"count\": [6]}}}\n");
  int64_t index = 0;
  for (int e = 0; e < 2; ++e) {
    const int64_t n = kV21Lengths[e];
    torch::Tensor state = torch::empty({n, 2});
    std::vector<std::string> png;
    for (int k = 0; k < n; ++k) {
      for (int j = 0; j < 2; ++j) state[k][j] = v21_state(e, k, j);
      png.push_back(encode_png(image_frame_hwc(e, k)));
    }
    torch::Tensor frame_index = torch::arange(n, torch::kLong);
    std::vector<ParquetColumn> columns{
        ParquetColumn::tensor("observation.state", state),
        ParquetColumn::image(kImageKey, png),
        ParquetColumn::tensor("timestamp", frame_index.to(torch::kFloat) / static_cast<float>(kFps)),
        ParquetColumn::tensor("frame_index", frame_index),
        ParquetColumn::tensor("episode_index", torch::full({n}, e, torch::kLong)),
        ParquetColumn::tensor("index", torch::arange(index, index + n, torch::kLong)),
        ParquetColumn::tensor("task_index", torch::full({n}, e, torch::kLong))};
    index += n;
    fs::path data = root / ("data/chunk-00" + std::to_string(e)) / ("episode_00000" + std::to_string(e) + ".parquet");
    fs::create_directories(data.parent_path());
    ParquetWriter writer(data);
    writer.write_row_group(columns);
    writer.close();

    fs::path video =
        root / ("videos/chunk-00" + std::to_string(e)) / kVideoKey / ("episode_00000" + std::to_string(e) + ".mp4");
    fs::create_directories(video.parent_path());
    io::VideoWriterOptions options;
    options.codec = "libx264";
    io::VideoWriter video_writer(video, kCam, kCam, kFps, options);
    int frames = e == 1 ? video_frames_of_episode1 : static_cast<int>(n);
    for (int k = 0; k < frames; ++k) video_writer.write(cam_frame_chw(e, k).permute({1, 2, 0}));
    video_writer.finish();
  }
}
}  // namespace

TEST_CASE("dataset: v2.1 per-episode files") {
  TempDir tmp;
  fs::path root = tmp.path / "v21";
  write_v21(root);
  LogCapture log;
  LeRobotDataset dataset(root);
  const DatasetMeta& meta = dataset.meta();
  CHECK(meta.info.is_v2());
  CHECK(meta.info.codebase_version == "v2.1");
  CHECK(meta.info.extra.at("total_chunks") == 2);
  CHECK(meta.info.extra.at("total_videos") == 2);
  CHECK_FALSE(contains(log.text(), "total_chunks"));  // legacy keys of v2.x are expected, no warning
  CHECK(meta.info.feature(kImageKey).chw_shape() == std::vector<int64_t>{3, kImg, kImg});  // legacy "channel"
  CHECK(meta.tasks == std::vector<std::string>{"open the drawer", "close the drawer"});
  REQUIRE(meta.episodes.size() == 2);
  CHECK(meta.episodes[1].data_chunk == 1);
  CHECK(meta.episodes[1].from_index == 4);
  CHECK(meta.episodes[1].to_index == 10);
  CHECK(meta.episodes[1].tasks == std::vector<std::string>{"close the drawer"});
  CHECK(meta.data_file(meta.episodes[1]) == root / "data/chunk-001/episode_000001.parquet");
  CHECK(meta.video_file(meta.episodes[1], kVideoKey) == root / "videos/chunk-001" / kVideoKey / "episode_000001.mp4");
  CHECK(meta.episodes[1].videos.at(kVideoKey).from_timestamp == 0.0);  // each v2.1 video starts at 0

  REQUIRE(dataset.size() == 10);
  ReadContext context;
  for (int64_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    int e = i < 4 ? 0 : 1;
    int k = static_cast<int>(e ? i - 4 : i);
    Sample item = dataset.get(i, context);
    CHECK(item.at("observation.state")[0].item<float>() == v21_state(e, k, 0));
    CHECK(item.at("observation.state")[1].item<float>() == v21_state(e, k, 1));
    CHECK(item.at("index").item<int64_t>() == i);
    CHECK(item.at("episode_index").item<int64_t>() == e);
    CHECK(item.at("frame_index").item<int64_t>() == k);
    CHECK(meta.task(item.at("task_index").item<int64_t>()) == meta.tasks[e]);
    CHECK(torch::equal(item.at(kImageKey), image_frame_hwc(e, k).permute({2, 0, 1})));
    CHECK(max_diff(item.at(kVideoKey), cam_frame_chw(e, k)) <= kVideoTolerance);
    CHECK(nearest_frame(item.at(kVideoKey), e) == k);
  }
  // delta windows work the same on v2.1
  DatasetOptions options;
  options.delta_timestamps = {{"observation.state", {-0.1, 0.0}}};
  options.episodes = std::vector<int64_t>{1};
  LeRobotDataset windowed(root, options);
  Sample item = windowed.get(0, context);
  CHECK(item.at("observation.state")[0][0].item<float>() == v21_state(1, 0, 0));
  CHECK(torch::equal(item.at("observation.state_is_pad"), torch::tensor({true, false})));

  // stats aggregated from episodes_stats.jsonl: count-weighted mean, pooled std, min of min, max of max
  REQUIRE(meta.stats.has_value());
  const FeatureStats& stats = meta.stats->at("observation.state");
  const double n0 = 4, n1 = 6;
  const double mean0[2] = {1.5, 2.0}, mean1[2] = {12.5, 13.0}, std0[2] = {1.0, 1.0}, std1[2] = {2.0, 3.0};
  for (int j = 0; j < 2; ++j) {
    double mean = (mean0[j] * n0 + mean1[j] * n1) / (n0 + n1);
    double var = ((std0[j] * std0[j] + (mean0[j] - mean) * (mean0[j] - mean)) * n0 +
                  (std1[j] * std1[j] + (mean1[j] - mean) * (mean1[j] - mean)) * n1) /
                 (n0 + n1);
    CHECK(stats.mean[j].item<double>() == doctest::Approx(mean).epsilon(1e-12));
    CHECK(stats.std[j].item<double>() == doctest::Approx(std::sqrt(var)).epsilon(1e-12));
  }
  CHECK(stats.min[0].item<double>() == 0.0);
  CHECK(stats.min[1].item<double>() == 0.5);
  CHECK(stats.max[0].item<double>() == 15.0);
  CHECK(stats.max[1].item<double>() == 15.5);
  CHECK(stats.count.to(torch::kLong).item<int64_t>() == 10);
}

TEST_CASE("dataset: v2.1 errors") {
  TempDir tmp;
  {
    // video shorter than its episode: the last frames are outside tolerance
    fs::path root = tmp.path / "short";
    write_v21(root, 4);
    LeRobotDataset dataset(root);
    ReadContext context;
    CHECK(dataset.get(4 + 3, context).count(kVideoKey) == 1);
    std::string message = error_of<util::DataError>([&] { dataset.get(4 + 5, context); });
    CHECK_HAS(message, "episode 1");
    CHECK_HAS(message, kVideoKey);
    CHECK_HAS(message, "t=0.500000");
  }
  {
    fs::path root = tmp.path / "broken";
    write_v21(root);
    fs::remove(root / "meta" / "tasks.jsonl");
    std::string message = error_of<util::IoError>([&] { LeRobotDataset bad(root); });
    CHECK_HAS(message, (root / "meta" / "tasks.jsonl").string());
    write_text(root / "meta" / "tasks.jsonl", "{\"task_index\": 0, \"task\": \"open the drawer\"}\n{oops\n");
    message = error_of<util::IoError>([&] { LeRobotDataset bad(root); });
    CHECK_HAS(message, "tasks.jsonl:2");
    CHECK_HAS(message, "not valid JSON");
    write_text(root / "meta" / "tasks.jsonl", "{\"task_index\": 1e999999, \"task\": \"open the drawer\"}\n");
    CHECK_HAS(error_of<util::IoError>([&] { LeRobotDataset bad(root); }), "tasks.jsonl:1");
    write_text(root / "meta" / "tasks.jsonl",
               "{\"task_index\": 0, \"task\": \"open the drawer\"}\n{\"task_index\": 1}\n");
    message = error_of<util::DataError>([&] { LeRobotDataset bad(root); });
    CHECK_HAS(message, "tasks.jsonl");
    CHECK_HAS(message, "no 'task'");
    write_text(
        root / "meta" / "tasks.jsonl",
        "{\"task_index\": 0, \"task\": \"open the drawer\"}\n{\"task_index\": 1, \"task\": \"close the drawer\"}\n");
    // an episode naming a task that is not in tasks.jsonl
    write_text(root / "meta" / "episodes.jsonl",
               "{\"episode_index\": 0, \"tasks\": [\"open the drawer\"], \"length\": 4}\n"
               "{\"episode_index\": 1, \"tasks\": [\"fly\"], \"length\": 6}\n");
    message = error_of<util::DataError>([&] { LeRobotDataset bad(root); });
    CHECK_HAS(message, "episode 1 names task 'fly'");
    // a length that disagrees with the data file
    write_text(root / "meta" / "episodes.jsonl",
               "{\"episode_index\": 0, \"tasks\": [\"open the drawer\"], \"length\": 3}\n"
               "{\"episode_index\": 1, \"tasks\": [\"close the drawer\"], \"length\": 7}\n");
    message = error_of<util::DataError>([&] { LeRobotDataset bad(root); });
    CHECK_HAS(message, "episode_000000.parquet");
    CHECK_HAS(message, "episode 0 should have 3 contiguous rows");
  }
  {
    // episodes.jsonl lines in any order (LeRobot sorts them by episode_index): frame ranges follow
    // the episode order, not the line order
    fs::path root = tmp.path / "reordered";
    write_v21(root);
    write_text(root / "meta" / "episodes.jsonl",
               "{\"episode_index\": 1, \"tasks\": [\"close the drawer\"], \"length\": 6}\n"
               "{\"episode_index\": 0, \"tasks\": [\"open the drawer\"], \"length\": 4}\n");
    LeRobotDataset dataset(root);
    CHECK(dataset.meta().episodes[0].from_index == 0);
    CHECK(dataset.meta().episodes[1].from_index == 4);
    ReadContext context;
    Sample item = dataset.get(5, context);
    CHECK(item.at("episode_index").item<int64_t>() == 1);
    CHECK(item.at("observation.state")[0].item<float>() == v21_state(1, 1, 0));
  }
}

// --- synthetic push -------------------------------------------------------------------------------
TEST_CASE("dataset: synthetic push task") {
  TempDir tmp;
  SyntheticPushOptions options;
  options.episodes = 3;
  options.max_episode_length = 30;
  int64_t frames = write_synthetic_push(tmp.path / "push", options);
  LeRobotDataset dataset(tmp.path / "push");
  const DatasetMeta& meta = dataset.meta();
  CHECK(dataset.size() == frames);
  CHECK(meta.info.total_episodes == 3);
  CHECK(meta.info.fps == 10);
  CHECK(meta.info.robot_type == std::optional<std::string>("lrhost_push2d"));
  CHECK(meta.info.feature("observation.state").item_shape() == std::vector<int64_t>{6});
  CHECK(meta.info.feature("action").item_shape() == std::vector<int64_t>{2});
  CHECK(meta.info.feature("observation.images.top").chw_shape() == std::vector<int64_t>{3, 64, 64});
  CHECK((meta.info.feature("observation.images.top").kind == FeatureKind::Video));
  for (const Episode& episode : meta.episodes) {
    CHECK(episode.length >= 2);
    CHECK(episode.length <= 30);
    CHECK(episode.tasks.size() == 1);
  }
  CHECK(!meta.tasks.empty());
  const torch::Tensor& action = dataset.column("action");
  CHECK(shape_of(action) == std::vector<int64_t>{frames, 2});
  torch::Tensor speed = action.norm(2, 1);
  CHECK(speed.max().item<float>() <= 0.06f + 1e-6f);
  CHECK(speed.max().item<float>() > 0.01f);  // the expert does move
  const torch::Tensor& state = dataset.column("observation.state");
  CHECK(shape_of(state) == std::vector<int64_t>{frames, 6});
  CHECK(state.min().item<float>() >= 0.0f);
  CHECK(state.max().item<float>() <= 1.0f);
  // the agent moves by the action: state[t+1].agent = clamp(state[t].agent + action[t])
  const Episode& first = meta.episodes[0];
  for (int64_t t = first.from_index; t + 1 < first.to_index; ++t) {
    for (int axis = 0; axis < 2; ++axis) {
      float expected = std::clamp(state[t][axis].item<float>() + action[t][axis].item<float>(), 0.05f, 0.95f);
      CHECK(state[t + 1][axis].item<float>() == doctest::Approx(expected).epsilon(1e-5));
    }
  }
  // cameras decode: the red agent disc is where the state says
  ReadContext context;
  for (int64_t i : {int64_t{0}, frames / 2, frames - 1}) {
    CAPTURE(i);
    Sample item = dataset.get(i, context);
    const torch::Tensor& image = item.at("observation.images.top");
    REQUIRE(shape_of(image) == std::vector<int64_t>{3, 64, 64});
    CHECK((image.scalar_type() == torch::kUInt8));
    int x = static_cast<int>(item.at("observation.state")[0].item<float>() * 64);
    int y = static_cast<int>(item.at("observation.state")[1].item<float>() * 64);
    x = std::clamp(x, 0, 63), y = std::clamp(y, 0, 63);
    CHECK(image[0][y][x].item<int>() > 150);  // red
    CHECK(image[2][y][x].item<int>() < 110);
  }
}

TEST_CASE("dataset: default_dataset is created once in LRHOST_CACHE") {
  TempDir tmp;
  const char* previous = std::getenv("LRHOST_CACHE");
  std::string saved = previous ? previous : "";
  setenv("LRHOST_CACHE", tmp.path.c_str(), 1);
  struct Restore {
    bool had;
    std::string value;
    ~Restore() {
      if (had)
        setenv("LRHOST_CACHE", value.c_str(), 1);
      else
        unsetenv("LRHOST_CACHE");
    }
  } restore{previous != nullptr, saved};

  fs::path root = default_dataset();
  CHECK(root == tmp.path / "datasets" / "lrhost_push2d_v2");
  REQUIRE(fs::exists(root / "meta" / "info.json"));
  auto written = fs::last_write_time(root / "meta" / "info.json");
  // no temporary folder left behind
  for (const auto& entry : fs::directory_iterator(tmp.path / "datasets"))
    CHECK_MESSAGE(!contains(entry.path().filename().string(), ".tmp"), entry.path());

  auto start = std::chrono::steady_clock::now();
  CHECK(default_dataset() == root);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 0.5);
  CHECK(fs::last_write_time(root / "meta" / "info.json") == written);

  LeRobotDataset dataset(root);
  CHECK(dataset.meta().info.total_episodes == 200);
  CHECK(dataset.size() == 3458);
}

// --- dataset verify -------------------------------------------------------------------------------
namespace {
// Every problem as "file: what", one per line, for CHECK_HAS on a whole report.
std::string problems_text(const VerifyReport& report) {
  std::string text;
  for (const VerifyProblem& problem : report.problems) text += problem.file.string() + ": " + problem.what + "\n";
  return text;
}
}  // namespace

TEST_CASE("dataset: verify reads every file and lists every problem") {
  TempDir tmp;
  fs::path root = write_test_dataset(tmp.path / "ds");
  const fs::path data_file = root / "data" / "chunk-000" / "file-000.parquet";
  const fs::path video_file = root / "videos" / kVideoKey / "chunk-000" / "file-000.mp4";
  const fs::path info_file = root / "meta" / "info.json";

  VerifyReport report = verify_dataset(root);
  CHECK_MESSAGE(report.ok(), problems_text(report));
  CHECK(report.parquet_files == 1);
  CHECK(report.rows == kTotal);
  CHECK(report.video_files == 1);
  CHECK(report.video_frames == kTotal);
  CHECK(report.images == kTotal);  // every PNG cell decoded

  // a wrong frame count in info.json is named, and reading goes on
  edit_info(root, [](ojson& j) { j["total_frames"] = kTotal + 1; });
  report = verify_dataset(root);
  REQUIRE(report.problems.size() == 2);  // against the episodes and against the data rows
  CHECK(report.problems[0].file == info_file);
  CHECK_HAS(report.problems[0].what, "total_frames=25 but the episodes add up to 24");
  CHECK_HAS(report.problems[1].what, "total_frames=25 but the data files hold 24 rows");
  CHECK(report.video_frames == kTotal);
  edit_info(root, [](ojson& j) { j["total_frames"] = kTotal; });

  // episode 1's video span shifted by half a frame: its frames are missing, the others are fine
  rewrite_episode_timestamps(root, {kVideoKey}, [](const std::string&, torch::Tensor& from) { from[1] += 0.05; });
  report = verify_dataset(root);
  REQUIRE(report.problems.size() == 1);
  CHECK(report.problems[0].file == video_file);
  CHECK_HAS(report.problems[0].what,
            "camera 'observation.images.cam': frame times with no frame within tolerance_s=0.0001: episode 1 (9 frame "
            "times in 1 episode); first: episode 1: t=");
  rewrite_episode_timestamps(root, {kVideoKey}, [](const std::string&, torch::Tensor& from) { from[1] -= 0.05; });
  CHECK(verify_dataset(root).ok());

  // a truncated data file, a truncated video and a wrong total_frames at once: all three named
  fs::path backup = tmp.path / "backup";
  fs::copy(root, backup, fs::copy_options::recursive);
  fs::resize_file(data_file, fs::file_size(data_file) / 2);
  fs::resize_file(video_file, fs::file_size(video_file) / 2);
  edit_info(root, [](ojson& j) { j["total_frames"] = 7; });
  report = verify_dataset(root);
  std::string text = problems_text(report);
  CHECK_HAS(text, data_file.string() + ": ");
  CHECK_HAS(text, video_file.string() + ": ");
  CHECK_HAS(text, info_file.string() + ": ");
  CHECK_FALSE(report.ok());
  // every episode of the truncated video misses frames: one line per cause, not one per episode
  int video_lines = 0;
  for (const VerifyProblem& problem : report.problems) video_lines += problem.file == video_file;
  CHECK_MESSAGE(video_lines <= 4, text);  // decode error, frame count, span, missing frames

  // a missing video file and a data file that is not parquet at all
  remove_tree(root);
  fs::copy(backup, root, fs::copy_options::recursive);
  fs::remove(video_file);
  write_text(data_file, std::string(4096, 'x'));
  report = verify_dataset(root);
  text = problems_text(report);
  CHECK_HAS(text, video_file.string() + ": video file not found");
  CHECK_HAS(text, data_file.string() + ": ");
  CHECK(report.problems.size() == 3);  // both files, and the data rows no longer add up to total_frames

  // a folder that is no dataset: one problem naming it
  report = verify_dataset(tmp.path / "none");
  REQUIRE(report.problems.size() == 1);
  CHECK_HAS(report.problems[0].what, "does not exist");
}

TEST_CASE("dataset: verify on v2.1 and on the synthetic task") {
  TempDir tmp;
  write_v21(tmp.path / "v21");
  VerifyReport report = verify_dataset(tmp.path / "v21");
  CHECK_MESSAGE(report.ok(), problems_text(report));
  CHECK(report.parquet_files == 2);  // one per episode
  CHECK(report.video_files == 2);
  CHECK(report.rows == 10);

  // episode 1's video has 4 frames where its episode has 6
  write_v21(tmp.path / "short", 4);
  report = verify_dataset(tmp.path / "short");
  std::string text = problems_text(report);
  CHECK_HAS(text, "episode_000001.mp4: 4 frames decode, but its episodes (1) have 6 frames");
  CHECK_HAS(text, "camera '" + std::string(kVideoKey) +
                      "': frame times with no frame within tolerance_s=0.0001: "
                      "episode 1 (2 frame times in 1 episode)");

  SyntheticPushOptions options;
  options.episodes = 3;
  options.max_episode_length = 20;
  options.image_size = 32;
  options.second_camera = true;
  int64_t frames = write_synthetic_push(tmp.path / "push", options);
  report = verify_dataset(tmp.path / "push");
  CHECK_MESSAGE(report.ok(), problems_text(report));
  CHECK(report.rows == frames);
  CHECK(report.video_frames == 2 * frames);
}
