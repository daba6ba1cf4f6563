// Parsing and writing meta/info.json; see dataset_info.hpp.
#include "host/data/dataset_info.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <set>

#include "host/util/error.hpp"
#include "host/util/strings.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::data {
namespace {
// ordered_json keeps info.json's key order: the feature order is the column order.
using nlohmann::ordered_json;

const std::vector<std::string>& known_top_level_keys() {
  static const std::vector<std::string> keys{"codebase_version",
                                             "robot_type",
                                             "total_episodes",
                                             "total_frames",
                                             "total_tasks",
                                             "chunks_size",
                                             "data_files_size_in_mb",
                                             "video_files_size_in_mb",
                                             "fps",
                                             "splits",
                                             "data_path",
                                             "video_path",
                                             "features",
                                             "tools"};
  return keys;
}

// Keys from v2.x that LeRobot's converter deletes; reading them is expected, not worth a warning.
const std::set<std::string>& legacy_keys() {
  static const std::set<std::string> keys{"total_chunks", "total_videos"};
  return keys;
}

template <typename T>
T get_typed(const ordered_json& object, const std::string& key, const std::string& file, const char* expected) {
  const ordered_json& value = object.at(key);
  if constexpr (std::is_integral_v<T>)  // nlohmann would truncate 29.97 to 29 silently
    if (!value.is_number_integer())
      throw util::DataError(file + ": '" + key + "' must be " + expected + ", got " + value.dump());
  try {
    return value.get<T>();
  } catch (const ordered_json::exception&) {
    throw util::DataError(file + ": '" + key + "' must be " + expected + ", got " + value.dump());
  }
}

FeatureSpec parse_feature(const std::string& key, const ordered_json& spec, const std::string& file) {
  std::string where = file + ": feature '" + key + "'";
  if (!spec.is_object()) throw util::DataError(where + " must be an object with 'dtype' and 'shape'");
  if (!spec.contains("dtype") || !spec["dtype"].is_string()) throw util::DataError(where + " has no string 'dtype'");
  if (!spec.contains("shape") || !spec["shape"].is_array()) throw util::DataError(where + " has no 'shape' list");
  FeatureSpec feature;
  feature.key = key;
  feature.dtype = spec["dtype"].get<std::string>();
  for (const ordered_json& dim : spec["shape"]) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < 0)
      throw util::DataError(where + ": shape " + spec["shape"].dump() + " must hold non-negative integers");
    feature.shape.push_back(dim.get<int64_t>());
  }
  feature.names = spec.value("names", ordered_json());
  feature.info = spec.value("info", ordered_json());
  if (feature.dtype == "video" || feature.dtype == "image") {
    feature.kind = feature.dtype == "video" ? FeatureKind::Video : FeatureKind::Image;
    feature.scalar_type = c10::kByte;
    if (feature.shape.size() != 3)
      throw util::DataError(where + ": a camera needs shape [height, width, channels], got " + spec["shape"].dump());
  } else if (feature.dtype == "string" || feature.dtype == "language") {
    feature.kind = FeatureKind::Text;
  } else {
    try {
      feature.scalar_type = util::parse_dtype(feature.dtype);
    } catch (const util::ConfigError&) {
      throw util::DataError(where + ": unsupported dtype '" + feature.dtype + "'",
                            "numeric dtypes: " + util::quoted_list(util::dtype_names()) + ", or video, image, string");
    }
  }
  return feature;
}

ordered_json feature_to_json(const FeatureSpec& feature) {
  ordered_json spec = ordered_json::object();
  spec["dtype"] = feature.dtype;
  spec["shape"] = feature.shape;
  spec["names"] = feature.names;
  if (!feature.info.is_null()) spec["info"] = feature.info;
  return spec;
}
}  // namespace

std::vector<int64_t> FeatureSpec::chw_shape() const {
  // LeRobot (dataset_to_policy_features) permutes only when the last name is a channel name.
  if (names.is_array() && names.size() == 3 && names[2].is_string()) {
    std::string last = names[2].get<std::string>();
    if (last == "channels" || last == "channel") return {shape[2], shape[0], shape[1]};
  }
  return shape;
}

std::vector<int64_t> FeatureSpec::item_shape() const {
  if (is_camera()) return chw_shape();
  if (shape.size() == 1 && shape[0] == 1) return {};
  return shape;
}

const std::vector<std::string>& default_feature_keys() {
  static const std::vector<std::string> keys{"timestamp", "frame_index", "episode_index", "index", "task_index"};
  return keys;
}

const FeatureSpec* DatasetInfo::find_feature(const std::string& key) const {
  for (const auto& feature : features)
    if (feature.key == key) return &feature;
  return nullptr;
}

const FeatureSpec& DatasetInfo::feature(const std::string& key) const {
  if (const FeatureSpec* found = find_feature(key)) return *found;
  std::vector<std::string> keys;
  for (const auto& feature : features) keys.push_back(feature.key);
  throw util::DataError("the dataset has no feature '" + key + "'", "features: " + util::quoted_list(keys));
}

std::vector<std::string> DatasetInfo::keys_of(FeatureKind kind) const {
  std::vector<std::string> keys;
  for (const auto& feature : features)
    if (feature.kind == kind) keys.push_back(feature.key);
  return keys;
}

std::vector<std::string> DatasetInfo::camera_keys() const {
  std::vector<std::string> keys;
  for (const auto& feature : features)
    if (feature.is_camera()) keys.push_back(feature.key);
  return keys;
}

DatasetInfo DatasetInfo::read(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::ifstream in(path);
  if (!in)
    throw util::IoError("cannot open " + file, "is this the root of a LeRobot dataset (it needs meta/info.json)?");
  ordered_json root;
  try {
    root = ordered_json::parse(in);
  } catch (const ordered_json::exception& error) {  // parse_error, and out_of_range for a number beyond double
    throw util::IoError(file + " is not valid JSON: " + error.what());
  }
  if (!root.is_object()) throw util::DataError(file + " must hold a JSON object");
  for (const char* key : {"codebase_version", "fps", "features", "data_path"})
    if (!root.contains(key)) throw util::DataError(file + " has no '" + key + "'");

  DatasetInfo info;
  info.codebase_version = get_typed<std::string>(root, "codebase_version", file, "a string like \"v3.0\"");
  int major = 0, minor = 0;
  if (std::sscanf(info.codebase_version.c_str(), "v%d.%d", &major, &minor) != 2)
    throw util::DataError(file + ": codebase_version '" + info.codebase_version + "' is not of the form vMAJOR.MINOR");
  if (major == 2 && minor < 1)
    throw util::DataError(
        file + ": codebase_version " + info.codebase_version + " is too old (lrhost reads v2.1 and v3.x)",
        "convert it with LeRobot's convert_dataset_v20_to_v21, then v21_to_v30");
  if (major != 2 && major != 3)
    throw util::DataError(file + ": codebase_version " + info.codebase_version +
                          " is not supported (lrhost reads v2.1 and v3.x)");
  if (major == 3 && minor > 0)
    spdlog::warn("{}: codebase_version {} is newer than v3.0, which lrhost was written for; reading it as v3.0", file,
                 info.codebase_version);
  info.version_major = major;
  info.version_minor = minor;

  info.fps = get_typed<int>(root, "fps", file, "a positive integer");
  if (info.fps <= 0) throw util::DataError(file + ": fps must be positive, got " + std::to_string(info.fps));
  info.data_path = get_typed<std::string>(root, "data_path", file, "a path template string");
  if (root.contains("video_path"))
    info.video_path = root["video_path"].is_null()
                          ? std::nullopt
                          : std::optional(get_typed<std::string>(root, "video_path", file, "a path template or null"));
  else
    info.video_path.reset();
  if (root.contains("robot_type") && !root["robot_type"].is_null())
    info.robot_type = get_typed<std::string>(root, "robot_type", file, "a string or null");
  for (auto [key, target] : {std::pair{"total_episodes", &info.total_episodes},
                             {"total_frames", &info.total_frames},
                             {"total_tasks", &info.total_tasks},
                             {"chunks_size", &info.chunks_size},
                             {"data_files_size_in_mb", &info.data_files_size_in_mb},
                             {"video_files_size_in_mb", &info.video_files_size_in_mb}}) {
    if (root.contains(key)) *target = get_typed<int64_t>(root, key, file, "an integer");
  }
  if (info.chunks_size <= 0) throw util::DataError(file + ": chunks_size must be positive");
  if (root.contains("splits")) info.splits = root["splits"];

  const ordered_json& features = root["features"];
  if (!features.is_object()) throw util::DataError(file + ": 'features' must be an object of feature specs");
  for (const auto& [key, spec] : features.items()) info.features.push_back(parse_feature(key, spec, file));
  for (const std::string& key : default_feature_keys())
    if (!info.find_feature(key))
      throw util::DataError(file + ": feature '" + key + "' is missing (LeRobot adds it to every dataset)");
  if (!info.keys_of(FeatureKind::Video).empty() && !info.video_path)
    throw util::DataError(file + ": the dataset has video features but video_path is null");

  for (const auto& [key, value] : root.items()) {
    bool known =
        std::find(known_top_level_keys().begin(), known_top_level_keys().end(), key) != known_top_level_keys().end();
    if (known) continue;
    info.extra[key] = value;
    if (!legacy_keys().count(key) || major != 2) spdlog::warn("{}: ignoring unknown key '{}'", file, key);
  }
  return info;
}

ordered_json DatasetInfo::to_json() const {
  ordered_json root;
  root["codebase_version"] = codebase_version;
  root["robot_type"] = robot_type ? ordered_json(*robot_type) : ordered_json();
  root["total_episodes"] = total_episodes;
  root["total_frames"] = total_frames;
  root["total_tasks"] = total_tasks;
  root["chunks_size"] = chunks_size;
  root["data_files_size_in_mb"] = data_files_size_in_mb;
  root["video_files_size_in_mb"] = video_files_size_in_mb;
  root["fps"] = fps;
  root["splits"] = splits;
  root["data_path"] = data_path;
  root["video_path"] = video_path ? ordered_json(*video_path) : ordered_json();
  ordered_json feature_table = ordered_json::object();
  for (const auto& feature : features) feature_table[feature.key] = feature_to_json(feature);
  root["features"] = feature_table;
  return root;
}

}  // namespace lrhost::data
