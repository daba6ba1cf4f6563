// Reading meta/ of v3.0 and v2.1 datasets into one in-memory form; see dataset_meta.hpp.
#include "host/data/dataset_meta.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>

#include "host/data/parquet/parquet_reader.hpp"
#include "host/data/path_template.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == extension) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<json> read_jsonl(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw util::IoError("cannot open " + file.string(), "a v2.1 dataset needs it under meta/");
  std::vector<json> rows;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      rows.push_back(json::parse(line));
    } catch (const json::exception& error) {  // parse_error, and out_of_range for a number beyond double
      throw util::IoError(file.string() + ":" + std::to_string(line_number) + " is not valid JSON: " + error.what());
    }
  }
  return rows;
}

template <typename T>
T jsonl_field(const json& row, const char* key, const fs::path& file) {
  if (!row.contains(key)) throw util::DataError(file.string() + ": a row has no '" + key + "': " + row.dump());
  try {
    return row[key].get<T>();
  } catch (const json::exception&) {
    throw util::DataError(file.string() + ": '" + key + "' has the wrong type in " + row.dump());
  }
}

// --- v3.0 -------------------------------------------------------------------------------------
void read_v3_episodes(DatasetMeta& meta) {
  std::vector<fs::path> files = sorted_files(meta.root / "meta" / "episodes", ".parquet");
  if (files.empty())
    throw util::IoError("no episode metadata in " + (meta.root / "meta" / "episodes").string(),
                        "a v3.0 dataset has meta/episodes/chunk-XXX/file-YYY.parquet");
  const std::vector<std::string> video_keys = meta.info.keys_of(FeatureKind::Video);
  for (const fs::path& file : files) {
    ParquetReader reader(file);
    // Columns as plain vectors: one conversion per column instead of one tensor access per value.
    auto ints = [&](const std::string& column) {
      torch::Tensor values = reader.read_tensor_cast(column, c10::kLong).contiguous();
      return std::vector<int64_t>(values.data_ptr<int64_t>(), values.data_ptr<int64_t>() + values.numel());
    };
    auto doubles = [&](const std::string& column) {
      torch::Tensor values = reader.read_tensor_cast(column, c10::kDouble).contiguous();
      return std::vector<double>(values.data_ptr<double>(), values.data_ptr<double>() + values.numel());
    };
    std::vector<int64_t> index = ints("episode_index"), length = ints("length");
    std::vector<int64_t> data_chunk = ints("data/chunk_index"), data_file = ints("data/file_index");
    std::vector<int64_t> from = ints("dataset_from_index"), to = ints("dataset_to_index");
    std::vector<std::vector<std::string>> tasks = reader.read_string_lists("tasks");
    struct VideoColumns {
      std::vector<int64_t> chunk, file;
      std::vector<double> from, to;
    };
    std::map<std::string, VideoColumns> videos;
    for (const std::string& key : video_keys) {
      std::string prefix = "videos/" + key + "/";
      videos[key] = {ints(prefix + "chunk_index"), ints(prefix + "file_index"), doubles(prefix + "from_timestamp"),
                     doubles(prefix + "to_timestamp")};
    }
    for (std::size_t row = 0; row < index.size(); ++row) {
      Episode episode;
      episode.index = index[row];
      episode.length = length[row];
      episode.tasks = tasks[row];
      episode.data_chunk = data_chunk[row];
      episode.data_file = data_file[row];
      episode.from_index = from[row];
      episode.to_index = to[row];
      for (const auto& [key, columns] : videos)
        episode.videos[key] = {columns.chunk[row], columns.file[row], columns.from[row], columns.to[row]};
      meta.episodes.push_back(std::move(episode));
    }
  }
}

void read_v3_tasks(DatasetMeta& meta) {
  fs::path file = meta.root / "meta" / "tasks.parquet";
  ParquetReader reader(file);
  // pandas writes the index named "task" as a column of that name (older writers: __index_level_0__).
  std::string task_column = reader.has_column("task") ? "task" : "__index_level_0__";
  std::vector<std::string> names = reader.read_strings(task_column);
  torch::Tensor indices = reader.read_tensor_cast("task_index", c10::kLong);
  meta.tasks.assign(names.size(), std::string());
  std::vector<bool> seen(names.size(), false);
  for (std::size_t row = 0; row < names.size(); ++row) {
    int64_t task_index = indices[static_cast<int64_t>(row)].item<int64_t>();
    if (task_index < 0 || task_index >= static_cast<int64_t>(names.size()) || seen[task_index])
      throw util::DataError(file.string() + ": task_index values must be 0.." + std::to_string(names.size() - 1) +
                            " without repeats, got " + std::to_string(task_index));
    seen[task_index] = true;
    meta.tasks[task_index] = names[row];
  }
}

// --- v2.1 -------------------------------------------------------------------------------------
void read_v21_tables(DatasetMeta& meta) {
  fs::path episodes_file = meta.root / "meta" / "episodes.jsonl";
  int64_t next_from = 0;
  for (const json& row : read_jsonl(episodes_file)) {
    Episode episode;
    episode.index = jsonl_field<int64_t>(row, "episode_index", episodes_file);
    episode.length = jsonl_field<int64_t>(row, "length", episodes_file);
    episode.tasks = jsonl_field<std::vector<std::string>>(row, "tasks", episodes_file);
    episode.data_chunk = episode.index / meta.info.chunks_size;
    // v2.1 videos hold one episode each, starting at t = 0.
    for (const std::string& key : meta.info.keys_of(FeatureKind::Video))
      episode.videos[key] = {episode.data_chunk, 0, 0.0, static_cast<double>(episode.length) / meta.info.fps};
    meta.episodes.push_back(std::move(episode));
  }
  std::sort(meta.episodes.begin(), meta.episodes.end(),
            [](const Episode& a, const Episode& b) { return a.index < b.index; });
  // Global frame ranges follow episode order, not the order of the lines in episodes.jsonl.
  for (Episode& episode : meta.episodes) {
    episode.from_index = next_from;
    episode.to_index = next_from += episode.length;
  }

  fs::path tasks_file = meta.root / "meta" / "tasks.jsonl";
  std::vector<json> rows = read_jsonl(tasks_file);
  meta.tasks.assign(rows.size(), std::string());
  for (const json& row : rows) {
    int64_t task_index = jsonl_field<int64_t>(row, "task_index", tasks_file);
    if (task_index < 0 || task_index >= static_cast<int64_t>(rows.size()))
      throw util::DataError(tasks_file.string() + ": task_index " + std::to_string(task_index) + " is out of range");
    meta.tasks[task_index] = jsonl_field<std::string>(row, "task", tasks_file);
  }
}

std::optional<DatasetStats> read_stats(const DatasetMeta& meta) {
  fs::path stats_file = meta.root / "meta" / "stats.json";
  if (fs::exists(stats_file)) return read_stats_json(stats_file);
  fs::path episode_stats_file = meta.root / "meta" / "episodes_stats.jsonl";
  if (!meta.info.is_v2() || !fs::exists(episode_stats_file)) return std::nullopt;
  // v2.1 keeps per-episode stats only; LeRobot aggregates them on load.
  std::map<std::string, std::vector<FeatureStats>> per_feature;
  for (const json& row : read_jsonl(episode_stats_file)) {
    const json& stats = row.at("stats");
    for (const auto& [key, value] : stats.items())
      per_feature[key].push_back(stats_from_json(value, episode_stats_file.string() + " feature '" + key + "'"));
  }
  DatasetStats stats;
  for (const auto& [key, episodes] : per_feature) stats[key] = aggregate_stats(episodes);
  return stats;
}

}  // namespace

// info.json and the episode table must agree; a mismatch means a half-written or hand-edited dataset.
std::vector<std::string> DatasetMeta::consistency_problems() const {
  std::vector<std::string> problems;
  const std::string info_file = (root / "meta" / "info.json").string();
  if (static_cast<int64_t>(episodes.size()) != info.total_episodes)
    problems.push_back(info_file + " says total_episodes=" + std::to_string(info.total_episodes) +
                       " but the episode metadata lists " + std::to_string(episodes.size()));
  int64_t frames = 0;
  for (std::size_t i = 0; i < episodes.size(); ++i) {
    const Episode& episode = episodes[i];
    std::string which = "episode " + std::to_string(episode.index);
    if (episode.index != static_cast<int64_t>(i))
      problems.push_back("episode metadata: expected episode_index " + std::to_string(i) + ", found " +
                         std::to_string(episode.index) + " (episodes must be numbered 0..N-1)");
    if (episode.to_index - episode.from_index != episode.length || episode.length <= 0)
      problems.push_back("episode metadata: " + which + " has length " + std::to_string(episode.length) +
                         " but dataset_from_index/to_index " + std::to_string(episode.from_index) + ".." +
                         std::to_string(episode.to_index));
    for (const std::string& task : episode.tasks)
      if (std::find(tasks.begin(), tasks.end(), task) == tasks.end())
        problems.push_back("episode metadata: " + which + " names task '" + task + "', which is not in the task table");
    frames += episode.length;
  }
  if (frames != info.total_frames)
    problems.push_back(info_file + " says total_frames=" + std::to_string(info.total_frames) +
                       " but the episodes add up to " + std::to_string(frames));
  if (static_cast<int64_t>(tasks.size()) != info.total_tasks)
    problems.push_back(info_file + " says total_tasks=" + std::to_string(info.total_tasks) +
                       " but the task table has " + std::to_string(tasks.size()));
  return problems;
}

DatasetMeta DatasetMeta::read_tables(const fs::path& root) {
  if (!fs::is_directory(root))
    throw util::IoError("dataset folder " + root.string() + " does not exist",
                        "give the root of a LeRobot dataset, or run 'lrhost dataset synth --out DIR'");
  DatasetMeta meta;
  meta.root = root;
  meta.info = DatasetInfo::read(root / "meta" / "info.json");
  if (meta.info.is_v2()) {
    read_v21_tables(meta);
  } else {
    read_v3_episodes(meta);
    read_v3_tasks(meta);
  }
  return meta;
}

void DatasetMeta::load_stats() {
  stats = read_stats(*this);
}

DatasetMeta DatasetMeta::read(const fs::path& root) {
  DatasetMeta meta = read_tables(root);
  if (auto problems = meta.consistency_problems(); !problems.empty()) throw util::DataError(problems.front());
  meta.load_stats();
  return meta;
}

const Episode& DatasetMeta::episode(int64_t index) const {
  if (index < 0 || index >= static_cast<int64_t>(episodes.size()))
    throw util::DataError("episode " + std::to_string(index) + " is out of range: " + root.string() +
                          " has episodes 0.." + std::to_string(static_cast<int64_t>(episodes.size()) - 1));
  return episodes[index];
}

fs::path DatasetMeta::data_file(const Episode& episode) const {
  std::map<std::string, TemplateValue> values;
  if (info.is_v2()) {
    values = {{"episode_chunk", episode.data_chunk}, {"episode_index", episode.index}};
  } else {
    values = {{"chunk_index", episode.data_chunk}, {"file_index", episode.data_file}};
  }
  return root / expand_path_template(info.data_path, values, "meta/info.json data_path");
}

fs::path DatasetMeta::video_file(const Episode& episode, const std::string& video_key) const {
  const EpisodeVideo& video = episode.videos.at(video_key);
  std::map<std::string, TemplateValue> values{{"video_key", video_key}};
  if (info.is_v2()) {
    values["episode_chunk"] = episode.data_chunk;
    values["episode_index"] = episode.index;
  } else {
    values["chunk_index"] = video.chunk_index;
    values["file_index"] = video.file_index;
  }
  return root / expand_path_template(info.video_path.value_or(""), values, "meta/info.json video_path");
}

const std::string& DatasetMeta::task(int64_t task_index) const {
  if (task_index < 0 || task_index >= static_cast<int64_t>(tasks.size()))
    throw util::DataError("task_index " + std::to_string(task_index) + " is out of range (the dataset has " +
                          std::to_string(tasks.size()) + " tasks)");
  return tasks[task_index];
}

}  // namespace lrhost::data
