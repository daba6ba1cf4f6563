// Where a `groot` policy's network and processor settings come from, as LeRobot 0.6.1 finds them:
//  - the GR00TN17Config (head widths, select_layer, horizon): base_model_path's config.json
//    (GR00TN17.from_pretrained), or lrhost's `geometry` folder's config.json;
//  - the backbone: LeRobot hard-codes Cosmos-Reason2-2B's Qwen3-VL config (groot_n1_7.py:751-803,
//    cosmos_reason2_backbone_config() here); a `geometry` folder's backbone_config.json replaces it,
//    as the test oracle's one monkeypatch does;
//  - the processor settings: base_model_path's processor_config.json `processor_kwargs`
//    (_load_n1_7_checkpoint_processor_assets, processor_groot.py:162): image sizes, crop fraction,
//    formalize_language, clip_outliers, max_action_horizon, embodiment_id.json's mapping, and — when the
//    checkpoint carries them for the embodiment — its own statistics (statistics.json[tag]) with
//    modality_configs[tag] (groups, percentiles, action / video horizons, camera keys): LeRobot's
//    GrootN17ActionDecodeStep path (groot_checkpoint_stats.hpp). Albumentations, letterboxing, relative
//    actions and the processor's state dropout (LeRobot draws it from Python's `random`) are refused as
//    not implemented.
// `geometry` is a folder or a shipped asset "lrhost/<name>" (io::resolve_model_dir).
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/groot/groot_checkpoint_stats.hpp"
#include "host/policy/groot/groot_config.hpp"
#include "host/policy/groot/groot_model.hpp"
#include "host/policy/groot/groot_pack.hpp"

namespace lrhost::policy::groot {

// What LeRobot reads from the base checkpoint's processor_config.json for the VLM-encode step and the
// pack step (defaults when the file or a key is absent: N1.7's 256 / 230 images, formalize_language
// and clip_outliers true).
struct GrootProcessorAssets {
  std::vector<int64_t> image_target_size{256, 256};
  std::vector<int64_t> image_crop_size{230, 230};
  std::optional<int64_t> shortest_image_edge;
  std::optional<double> crop_fraction;
  bool formalize_language = true;
  bool clip_outliers = true;
  std::optional<int64_t> max_action_horizon;  // processor_kwargs.max_action_horizon (an integer)
  bool use_percentiles = false;               // processor_kwargs.use_percentiles
  std::vector<std::pair<std::string, int64_t>> embodiment_mapping = default_embodiment_mapping();
  bool from_checkpoint = false;  // a processor_config.json was read
  // base_model_path is a local folder: LeRobot builds the processors from its sidecars
  // (is_raw_groot_n1_7_checkpoint) and writes raw_stats / modality_config objects, else null.
  bool local_base = false;
  // The checkpoint's own statistics for the embodiment, when statistics.json[tag] and
  // processor_kwargs.modality_configs[tag] both exist (else the dataset's stats are used), with the
  // two JSON objects as LeRobot inlines them in its pack / decode step configs.
  std::optional<GrootCheckpointStats> checkpoint_stats;
  // modality_configs[tag]'s horizons and camera keys, which apply with the dataset's stats too.
  GrootCheckpointLayout layout;
  nlohmann::ordered_json raw_stats = nlohmann::ordered_json::object();
  nlohmann::ordered_json modality_config = nlohmann::ordered_json::object();
};

struct GrootGeometry {
  nlohmann::json model_config;     // the GR00TN17Config object
  nlohmann::json backbone_config;  // the Qwen3-VL config object
  GrootModelConfig model;          // both parsed
  // The base checkpoint's folder when base_model_path resolves locally (its model.safetensors is the
  // weights lr.policy.new loads); empty otherwise.
  std::filesystem::path base_dir;
  GrootProcessorAssets assets;
  std::string source;  // where the geometry came from, for messages
};

// Cosmos-Reason2-2B's Qwen3-VL config as LeRobot hard-codes it.
nlohmann::json cosmos_reason2_backbone_config();

// GrootConfig's padded dims must equal the model's (its encoders' and decoder's widths): ConfigError.
void check_padded_dims(const GrootConfig& config, const GrootGeometry& geometry);

// Resolves `config`'s geometry (ConfigError naming base_model_path / geometry and the files looked
// for; NotImplemented for the checkpoint features above).
GrootGeometry resolve_geometry(const GrootConfig& config);

}  // namespace lrhost::policy::groot
