// LeRobot v3.0 dataset writing; see dataset_writer.hpp.
#include "host/data/dataset_writer.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <set>

#include "host/data/parquet/parquet_writer.hpp"
#include "host/data/path_template.hpp"
#include "host/data/stats/feature_stats.hpp"
#include "host/data/video/png_codec.hpp"
#include "host/data/video/video_reader.hpp"
#include "host/util/error.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::data {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {
constexpr int64_t kMiB = 1024 * 1024;

// Chunk/file numbering of LeRobot's update_chunk_file_indices: file_index wraps at chunks_size.
struct FileSlot {
  int64_t chunk = 0, file = 0;
  void advance(int64_t chunks_size) {
    if (++file == chunks_size) {
      file = 0;
      ++chunk;
    }
  }
};

void write_json_atomically(const fs::path& file, const ojson& value) {
  fs::path temporary = file;
  temporary += ".tmp";
  {
    std::ofstream out(temporary);
    out << value.dump(4) << "\n";
    if (!out) throw util::IoError("cannot write " + temporary.string());
  }
  fs::rename(temporary, file);
}

ojson hf_feature(const FeatureSpec& feature) {
  if (feature.kind == FeatureKind::Image) return {{"_type", "Image"}};
  ojson value = {{"dtype", feature.dtype}, {"_type", "Value"}};
  std::vector<int64_t> shape = feature.item_shape();
  if (shape.empty()) return value;
  if (shape.size() == 1) return {{"feature", value}, {"length", shape[0]}, {"_type", "Sequence"}};
  return {{"shape", shape}, {"dtype", feature.dtype}, {"_type", "Array" + std::to_string(shape.size()) + "D"}};
}

// pandas metadata that makes `task` the index of meta/tasks.parquet, as DataFrame.to_parquet writes it.
std::string pandas_task_metadata() {
  ojson meta = {{"index_columns", {"task"}},
                {"column_indexes",
                 {{{"name", nullptr},
                   {"field_name", nullptr},
                   {"pandas_type", "unicode"},
                   {"numpy_type", "object"},
                   {"metadata", {{"encoding", "UTF-8"}}}}}},
                {"columns",
                 {{{"name", "task_index"},
                   {"field_name", "task_index"},
                   {"pandas_type", "int64"},
                   {"numpy_type", "int64"},
                   {"metadata", nullptr}},
                  {{"name", "task"},
                   {"field_name", "task"},
                   {"pandas_type", "unicode"},
                   {"numpy_type", "object"},
                   {"metadata", nullptr}}}},
                {"creator", {{"library", "lrhost"}, {"version", LRHOST_VERSION}}},
                {"pandas_version", "2.2.3"}};
  return meta.dump();
}
}  // namespace

struct DatasetWriter::State {
  fs::path root;
  DatasetInfo info;
  WriterOptions options;
  bool finished = false;

  std::unique_ptr<ParquetWriter> data;
  FileSlot data_slot;
  int64_t data_bytes = 0;
  bool data_slot_used = false;

  struct Camera {
    std::unique_ptr<io::VideoWriter> writer;
    FileSlot slot;
    bool slot_used = false;
    int64_t frames_in_file = 0;
    fs::path first_file;
  };
  std::map<std::string, Camera> cameras;

  struct EpisodeRow {
    int64_t index = 0, length = 0, from = 0, to = 0;
    std::vector<std::string> tasks;
    FileSlot data;
    std::map<std::string, std::pair<FileSlot, std::pair<double, double>>> videos;
  };
  std::vector<EpisodeRow> episodes;
  std::vector<DatasetStats> episode_stats;
  std::vector<std::string> tasks;
  std::map<std::string, int64_t> task_index;
  int64_t total_frames = 0;

  int64_t data_limit() const { return options.data_file_bytes.value_or(options.data_files_size_in_mb * kMiB); }
  int64_t video_limit() const { return options.video_file_bytes.value_or(options.video_files_size_in_mb * kMiB); }

  fs::path data_path(const FileSlot& slot) const {
    return root /
           expand_path_template(info.data_path, {{"chunk_index", slot.chunk}, {"file_index", slot.file}}, "data_path");
  }
  fs::path video_path(const std::string& key, const FileSlot& slot) const {
    return root / expand_path_template(*info.video_path,
                                       {{"video_key", key}, {"chunk_index", slot.chunk}, {"file_index", slot.file}},
                                       "video_path");
  }
};

DatasetWriter::DatasetWriter(const fs::path& root, int fps, std::vector<WriterFeature> features, WriterOptions options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (fs::exists(root) && !(fs::is_directory(root) && fs::is_empty(root)))
    throw util::IoError("dataset folder " + root.string() + " already exists and is not empty",
                        "choose a new --out folder; lrhost never overwrites a dataset");
  if (fps <= 0) throw util::ConfigError("fps must be positive, got " + std::to_string(fps));
  if (options.chunks_size <= 0) throw util::ConfigError("chunks_size must be positive");
  s.root = root;
  s.options = std::move(options);
  s.info.fps = fps;
  s.info.chunks_size = s.options.chunks_size;
  s.info.data_files_size_in_mb = s.options.data_files_size_in_mb;
  s.info.video_files_size_in_mb = s.options.video_files_size_in_mb;
  s.info.robot_type = s.options.robot_type;
  std::set<std::string> seen;
  for (const WriterFeature& feature : features) {
    if (!seen.insert(feature.key).second) throw util::ConfigError("feature '" + feature.key + "' is given twice");
    if (std::find(default_feature_keys().begin(), default_feature_keys().end(), feature.key) !=
        default_feature_keys().end())
      throw util::ConfigError("feature '" + feature.key + "' is added by the writer itself; leave it out");
    FeatureSpec spec;
    spec.key = feature.key;
    spec.dtype = feature.dtype;
    spec.shape = feature.shape;
    spec.names = feature.names;
    if (feature.dtype == "video" || feature.dtype == "image") {
      spec.kind = feature.dtype == "video" ? FeatureKind::Video : FeatureKind::Image;
      spec.scalar_type = torch::kByte;
      if (feature.shape.size() != 3 || feature.shape[2] != 3)
        throw util::ConfigError("camera '" + feature.key + "' needs shape [height, width, 3]");
      if (spec.names.is_null()) spec.names = {"height", "width", "channels"};
    } else {
      spec.scalar_type = util::parse_dtype(feature.dtype);
    }
    s.info.features.push_back(spec);
  }
  auto add_default = [&](const std::string& key, const std::string& dtype, c10::ScalarType type) {
    FeatureSpec spec;
    spec.key = key;
    spec.dtype = dtype;
    spec.shape = {1};
    spec.scalar_type = type;
    s.info.features.push_back(spec);
  };
  add_default("timestamp", "float32", torch::kFloat);
  for (const char* key : {"frame_index", "episode_index", "index", "task_index"})
    add_default(key, "int64", torch::kLong);
  if (s.info.keys_of(FeatureKind::Video).empty()) s.info.video_path.reset();
  fs::create_directories(root);
}

DatasetWriter::~DatasetWriter() = default;

int64_t DatasetWriter::episodes_written() const {
  return static_cast<int64_t>(state_->episodes.size());
}

void DatasetWriter::add_episode(const EpisodeData& episode) {
  State& s = *state_;
  if (s.finished) throw util::Error("dataset writer: add_episode after finish");
  const int64_t episode_index = static_cast<int64_t>(s.episodes.size());
  const std::string where = "episode " + std::to_string(episode_index);

  // Validate against the feature table: every feature present with the right dtype and shape.
  int64_t length = -1;
  for (const FeatureSpec& feature : s.info.features) {
    const auto& defaults = default_feature_keys();  // the writer fills these itself
    if (std::find(defaults.begin(), defaults.end(), feature.key) != defaults.end()) continue;
    auto found = episode.values.find(feature.key);
    if (found == episode.values.end()) throw util::DataError(where + ": feature '" + feature.key + "' is missing");
    const torch::Tensor& value = found->second;
    std::vector<int64_t> expected = feature.is_camera() ? feature.shape : feature.item_shape();
    std::vector<int64_t> got(value.sizes().begin() + (value.dim() ? 1 : 0), value.sizes().end());
    if (value.dim() == 0 || got != expected || value.scalar_type() != feature.scalar_type)
      throw util::DataError(where + ": feature '" + feature.key + "' must be " + feature.dtype + " [N, " +
                            c10::str(c10::IntArrayRef(expected)) + "], got " + c10::toString(value.scalar_type()) +
                            " " + c10::str(value.sizes()));
    if (length >= 0 && value.size(0) != length)
      throw util::DataError(where + ": feature '" + feature.key + "' has " + std::to_string(value.size(0)) +
                            " frames, others have " + std::to_string(length));
    length = value.size(0);
  }
  for (const auto& [key, value] : episode.values)
    if (!s.info.find_feature(key)) throw util::DataError(where + ": unknown feature '" + key + "'");
  if (length <= 0) throw util::DataError(where + " has no frames");
  if (episode.tasks.size() != 1 && static_cast<int64_t>(episode.tasks.size()) != length)
    throw util::DataError(where + ": give one task for all frames or one per frame (" + std::to_string(length) + ")");

  // Tasks: new strings get the next task_index, as LeRobot's add_task does.
  std::vector<std::string> episode_tasks;
  torch::Tensor task_index = torch::empty({length}, torch::kLong);
  for (int64_t frame = 0; frame < length; ++frame) {
    const std::string& task = episode.tasks.size() == 1 ? episode.tasks[0] : episode.tasks[frame];
    auto [it, added] = s.task_index.emplace(task, static_cast<int64_t>(s.tasks.size()));
    if (added) s.tasks.push_back(task);
    task_index[frame] = it->second;
    if (std::find(episode_tasks.begin(), episode_tasks.end(), task) == episode_tasks.end())
      episode_tasks.push_back(task);
  }
  std::map<std::string, torch::Tensor> columns = episode.values;
  torch::Tensor frame_index = torch::arange(length, torch::kLong);
  columns["frame_index"] = frame_index;
  columns["timestamp"] = frame_index.to(torch::kFloat).div(static_cast<float>(s.info.fps));
  columns["episode_index"] = torch::full({length}, episode_index, torch::kLong);
  columns["index"] = frame_index + s.total_frames;
  columns["task_index"] = task_index;

  State::EpisodeRow row;
  row.index = episode_index;
  row.length = length;
  row.from = s.total_frames;
  row.to = s.total_frames + length;
  row.tasks = episode_tasks;

  // Data parquet: roll over when the current file reached its size limit (an episode never splits).
  if (s.data && s.data_bytes >= s.data_limit()) {
    s.data->close();
    s.data.reset();
    s.data_slot.advance(s.info.chunks_size);
    s.data_bytes = 0;
  }
  if (!s.data) {
    fs::path file = s.data_path(s.data_slot);
    fs::create_directories(file.parent_path());
    ojson features = ojson::object();
    for (const FeatureSpec& feature : s.info.features)
      if (feature.kind != FeatureKind::Video) features[feature.key] = hf_feature(feature);
    ojson hf = {{"info", {{"features", features}}}};
    s.data = std::make_unique<ParquetWriter>(
        file, std::vector<std::pair<std::string, std::string>>{{"huggingface", hf.dump()}});
  }
  std::vector<ParquetColumn> parquet_columns;
  for (const FeatureSpec& feature : s.info.features) {
    if (feature.kind == FeatureKind::Video) continue;
    const torch::Tensor& value = columns.at(feature.key);
    if (feature.kind == FeatureKind::Image) {
      std::vector<std::string> png;
      for (int64_t frame = 0; frame < length; ++frame) png.push_back(encode_png(value[frame]));
      for (const auto& bytes : png) s.data_bytes += static_cast<int64_t>(bytes.size());
      parquet_columns.push_back(ParquetColumn::image(feature.key, std::move(png)));
    } else {
      s.data_bytes += static_cast<int64_t>(value.nbytes());
      parquet_columns.push_back(ParquetColumn::tensor(feature.key, value.contiguous()));
    }
  }
  s.data->write_row_group(parquet_columns);
  row.data = s.data_slot;

  // Videos: append this episode's frames to the camera's current file.
  for (const std::string& key : s.info.keys_of(FeatureKind::Video)) {
    State::Camera& camera = s.cameras[key];
    if (camera.writer && fs::file_size(s.video_path(key, camera.slot)) >= static_cast<uintmax_t>(s.video_limit())) {
      camera.writer->finish();
      camera.writer.reset();
      camera.slot.advance(s.info.chunks_size);
      camera.frames_in_file = 0;
    }
    const torch::Tensor& frames = columns.at(key);
    if (!camera.writer) {
      fs::path file = s.video_path(key, camera.slot);
      fs::create_directories(file.parent_path());
      camera.writer = std::make_unique<io::VideoWriter>(file, static_cast<int>(frames.size(2)),
                                                        static_cast<int>(frames.size(1)), s.info.fps, s.options.video);
      if (camera.first_file.empty()) camera.first_file = file;
    }
    double from = static_cast<double>(camera.frames_in_file) / s.info.fps;
    for (int64_t frame = 0; frame < length; ++frame) camera.writer->write(frames[frame]);
    camera.frames_in_file += length;
    row.videos[key] = {camera.slot, {from, static_cast<double>(camera.frames_in_file) / s.info.fps}};
  }

  // Per-episode statistics of every feature, cameras as [N, C, H, W].
  DatasetStats stats;
  for (const FeatureSpec& feature : s.info.features) {
    torch::Tensor value = columns.at(feature.key);
    if (feature.is_camera()) value = value.permute({0, 3, 1, 2});
    stats[feature.key] = compute_episode_stats(value, feature.is_camera());
  }
  s.episode_stats.push_back(std::move(stats));
  s.total_frames += length;
  s.episodes.push_back(std::move(row));
}

void DatasetWriter::finish() {
  State& s = *state_;
  if (s.finished) return;
  if (s.episodes.empty()) throw util::DataError("dataset writer: no episodes were added to " + s.root.string());
  s.finished = true;
  if (s.data) s.data->close();
  s.data.reset();
  for (auto& [key, camera] : s.cameras) {
    camera.writer->finish();
    // info.json describes the stream as LeRobot's get_video_info does (probed, not assumed).
    VideoStreamInfo probe = probe_video(camera.first_file);
    for (FeatureSpec& feature : s.info.features) {
      if (feature.key != key) continue;
      feature.info = {{"video.height", probe.height},
                      {"video.width", probe.width},
                      {"video.codec", probe.codec},
                      {"video.pix_fmt", probe.pix_fmt},
                      {"video.fps", s.info.fps},
                      {"video.channels", 3},
                      {"has_audio", probe.has_audio},
                      {"video.g", s.options.video.gop},
                      {"video.crf", s.options.video.crf},
                      {"video.preset", s.options.video.preset},
                      {"video.fast_decode", 0},
                      {"video.video_backend", "pyav"},
                      {"video.extra_options", ojson::object()},
                      {"is_depth_map", false}};
    }
    camera.writer.reset();
  }
  const int64_t num_episodes = static_cast<int64_t>(s.episodes.size());
  fs::create_directories(s.root / "meta" / "episodes" / "chunk-000");

  // meta/episodes: one row per episode, per-episode stats as stats/<feature>/<stat>.
  {
    auto int_column = [&](const std::string& name, auto field) {
      torch::Tensor values = torch::empty({num_episodes}, torch::kLong);
      for (int64_t i = 0; i < num_episodes; ++i) values[i] = field(s.episodes[i]);
      return ParquetColumn::tensor(name, values);
    };
    std::vector<ParquetColumn> columns;
    columns.push_back(int_column("episode_index", [](const auto& e) { return e.index; }));
    std::vector<std::vector<std::string>> tasks;
    for (const auto& e : s.episodes) tasks.push_back(e.tasks);
    columns.push_back(ParquetColumn::string_list("tasks", tasks));
    columns.push_back(int_column("length", [](const auto& e) { return e.length; }));
    columns.push_back(int_column("data/chunk_index", [](const auto& e) { return e.data.chunk; }));
    columns.push_back(int_column("data/file_index", [](const auto& e) { return e.data.file; }));
    columns.push_back(int_column("dataset_from_index", [](const auto& e) { return e.from; }));
    columns.push_back(int_column("dataset_to_index", [](const auto& e) { return e.to; }));
    for (const std::string& key : s.info.keys_of(FeatureKind::Video)) {
      std::string prefix = "videos/" + key + "/";
      columns.push_back(
          int_column(prefix + "chunk_index", [&](const auto& e) { return e.videos.at(key).first.chunk; }));
      columns.push_back(int_column(prefix + "file_index", [&](const auto& e) { return e.videos.at(key).first.file; }));
      torch::Tensor from = torch::empty({num_episodes}, torch::kDouble),
                    to = torch::empty({num_episodes}, torch::kDouble);
      for (int64_t i = 0; i < num_episodes; ++i) {
        from[i] = s.episodes[i].videos.at(key).second.first;
        to[i] = s.episodes[i].videos.at(key).second.second;
      }
      columns.push_back(ParquetColumn::tensor(prefix + "from_timestamp", from));
      columns.push_back(ParquetColumn::tensor(prefix + "to_timestamp", to));
    }
    for (const FeatureSpec& feature : s.info.features) {
      for (const std::string& stat : s.episode_stats.front().at(feature.key).names()) {
        std::vector<torch::Tensor> values;
        for (const auto& stats : s.episode_stats) values.push_back(stats.at(feature.key).get(stat));
        torch::Tensor stacked = torch::stack(values);
        stacked = stat == "count" ? stacked.to(torch::kLong) : stacked.to(torch::kDouble);
        columns.push_back(ParquetColumn::tensor("stats/" + feature.key + "/" + stat, stacked.contiguous()));
      }
    }
    columns.push_back(int_column("meta/episodes/chunk_index", [](const auto&) { return int64_t{0}; }));
    columns.push_back(int_column("meta/episodes/file_index", [](const auto&) { return int64_t{0}; }));
    ParquetWriter writer(s.root / "meta" / "episodes" / "chunk-000" / "file-000.parquet");
    writer.write_row_group(columns);
    writer.close();
  }
  // meta/tasks.parquet
  {
    torch::Tensor indices = torch::arange(static_cast<int64_t>(s.tasks.size()), torch::kLong);
    ParquetWriter writer(s.root / "meta" / "tasks.parquet", {{"pandas", pandas_task_metadata()}});
    writer.write_row_group({ParquetColumn::tensor("task_index", indices), ParquetColumn::string("task", s.tasks)});
    writer.close();
  }
  // meta/stats.json: LeRobot's writer aggregation of the per-episode stats (same rounding).
  DatasetStats global;
  for (const FeatureSpec& feature : s.info.features) {
    std::vector<FeatureStats> per_episode;
    for (const auto& stats : s.episode_stats) per_episode.push_back(stats.at(feature.key));
    global[feature.key] = aggregate_stats_sequential(per_episode);  // LeRobot folds episodes in one by one
  }
  write_stats_json(s.root / "meta" / "stats.json", global);

  // info.json last: its presence marks a complete dataset.
  s.info.total_episodes = num_episodes;
  s.info.total_frames = s.total_frames;
  s.info.total_tasks = static_cast<int64_t>(s.tasks.size());
  s.info.splits = {{"train", "0:" + std::to_string(num_episodes)}};
  write_json_atomically(s.root / "meta" / "info.json", s.info.to_json());
}

}  // namespace lrhost::data
