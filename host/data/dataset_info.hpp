// meta/info.json of a LeRobot dataset: the codebase version, fps, the feature table and the path
// templates. Read strictly (types checked, unknown keys ignored with a warning as LeRobot does) and
// written back in LeRobot's field order by the dataset writer. Field meanings:
// shared/reference/lerobot.md section 1.2.
#pragma once
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::data {

enum class FeatureKind { Numeric, Video, Image, Text };

struct FeatureSpec {
  std::string key;
  std::string dtype;             // as written: "float32", "video", "image", "string", ...
  std::vector<int64_t> shape;    // as written ([H, W, C] for cameras)
  nlohmann::ordered_json names;  // null, a list, or a dict (LeRobot allows all three)
  nlohmann::ordered_json info;   // video info block, when present
  FeatureKind kind = FeatureKind::Numeric;
  c10::ScalarType scalar_type = c10::kFloat;  // Numeric only

  bool is_camera() const { return kind == FeatureKind::Video || kind == FeatureKind::Image; }
  // Camera frame shape as the policy sees it: [C, H, W] (LeRobot permutes [H, W, C] by its names).
  std::vector<int64_t> chw_shape() const;
  // Shape of one frame's value as read: scalar features (shape [1]) become shape [] like HF Value.
  std::vector<int64_t> item_shape() const;
};

// The five columns LeRobot appends to every dataset (DEFAULT_FEATURES).
const std::vector<std::string>& default_feature_keys();

struct DatasetInfo {
  std::string codebase_version = "v3.0";
  int version_major = 3, version_minor = 0;
  int fps = 0;
  std::vector<FeatureSpec> features;  // in info.json order
  int64_t total_episodes = 0, total_frames = 0, total_tasks = 0;
  int64_t chunks_size = 1000;
  int64_t data_files_size_in_mb = 100, video_files_size_in_mb = 200;
  std::string data_path = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
  std::optional<std::string> video_path = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";
  std::optional<std::string> robot_type;
  nlohmann::ordered_json splits = nlohmann::ordered_json::object();
  nlohmann::ordered_json extra =
      nlohmann::ordered_json::object();  // v2.1 keys we accept but do not use (total_chunks, ...)

  bool is_v2() const { return version_major == 2; }
  const FeatureSpec& feature(const std::string& key) const;  // DataError listing the features
  const FeatureSpec* find_feature(const std::string& key) const;
  std::vector<std::string> keys_of(FeatureKind kind) const;
  std::vector<std::string> camera_keys() const;  // video and image features, in order

  // Reads and validates <root>/meta/info.json. Accepts v3.x and v2.1 (converted on the fly by the
  // metadata reader); anything else is an error that says how to convert.
  static DatasetInfo read(const std::filesystem::path& file);
  nlohmann::ordered_json to_json() const;  // LeRobot's DatasetInfo field order
};

}  // namespace lrhost::data
