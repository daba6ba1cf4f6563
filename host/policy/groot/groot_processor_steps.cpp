// GR00T's processor steps at run time and in their files; see groot_processor_steps.hpp.
#include "host/policy/groot/groot_processor_steps.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "host/io/atomic_dir.hpp"
#include "host/io/hf_cache.hpp"
#include "host/policy/groot/groot_pack.hpp"
#include "host/policy/groot/groot_policy.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy::groot {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

// N1_7_NATIVE_ACTION_HORIZON: the pack step's horizon for a new embodiment is min(chunk_size, 40).
constexpr int64_t kNativeActionHorizon = 40;

const ordered_json& config_value(const ordered_json& config, const char* key, const std::string& where) {
  if (!config.is_object() || !config.contains(key)) throw util::DataError(where + ": missing '" + key + "'");
  return config[key];
}

int64_t config_integer(const ordered_json& config, const char* key, const std::string& where) {
  const auto& value = config_value(config, key, where);
  if (!value.is_number_integer())
    throw util::DataError(where + ": '" + key + "' must be an integer, got " + value.dump());
  return value.get<int64_t>();
}

bool config_bool(const ordered_json& config, const char* key, const std::string& where) {
  const auto& value = config_value(config, key, where);
  if (!value.is_boolean()) throw util::DataError(where + ": '" + key + "' must be true or false, got " + value.dump());
  return value.get<bool>();
}

// A setting LeRobot's step has that lrhost runs only at one value.
void require_value(const ordered_json& config, const char* key, const ordered_json& supported, const std::string& where,
                   const std::string& what) {
  if (config.contains(key) && config[key] != supported)
    throw util::NotImplemented(where + ": '" + key + "' = " + config[key].dump() + " (" + what +
                               ") is not implemented in lrhost (it runs " + supported.dump() + ")");
}

void reject_unknown(const ordered_json& config, const std::vector<std::string>& known, const std::string& where) {
  for (const auto& [key, value] : config.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw util::DataError(where + ": unknown config key '" + key + "'");
}

std::optional<MinMaxStats> min_max(const data::DatasetStats& stats, const std::string& key) {
  auto found = stats.find(key);
  if (found == stats.end()) return std::nullopt;
  MinMaxStats out;
  if (found->second.has("min")) out.min = found->second.get("min");
  if (found->second.has("max")) out.max = found->second.get("max");
  return out;
}

GrootImageGeometry image_geometry(const ordered_json& vlm, const std::string& where) {
  auto pair = [&](const char* key) {
    const auto& value = config_value(vlm, key, where);
    if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() || !value[1].is_number_integer())
      throw util::DataError(where + ": '" + key + "' must be [height, width], got " + value.dump());
    return std::pair{value[0].get<int64_t>(), value[1].get<int64_t>()};
  };
  GrootImageGeometry g;
  std::tie(g.target_height, g.target_width) = pair("image_target_size");
  g.crop_height = pair("image_crop_size").first;
  if (vlm.contains("shortest_image_edge") && !vlm["shortest_image_edge"].is_null())
    g.shortest_image_edge = config_integer(vlm, "shortest_image_edge", where);
  if (vlm.contains("crop_fraction") && !vlm["crop_fraction"].is_null()) {
    if (!vlm["crop_fraction"].is_number()) throw util::DataError(where + ": 'crop_fraction' must be a number");
    g.crop_fraction = vlm["crop_fraction"].get<double>();
  }
  return g;
}

// The checkpoint statistics a pack / decode step config inlines (raw_stats, modality_config,
// use_percentiles), parsed as groot_geometry parses the sidecars; nullopt when either object is null
// or empty of groups (the dataset's stats).
std::optional<GrootCheckpointStats> inline_checkpoint_stats(const ordered_json& config, const std::string& tag,
                                                            const std::string& where) {
  const auto& raw_stats = config_value(config, "raw_stats", where);
  const auto& modality_config = config_value(config, "modality_config", where);
  for (const auto* value : {&raw_stats, &modality_config})
    if (!value->is_null() && !value->is_object())
      throw util::DataError(where + ": 'raw_stats' and 'modality_config' must be objects or null");
  if (raw_stats.is_null() || modality_config.is_null()) return std::nullopt;
  const ordered_json kwargs{{"modality_configs", {{tag, modality_config}}},
                            {"use_percentiles", config.at("use_percentiles")}};
  return parse_groot_checkpoint_stats(ordered_json{{tag, raw_stats}}, ordered_json{{"processor_kwargs", kwargs}}, tag,
                                      where);
}

// LeRobot's warning, once per process: the checkpoint's cameras and the batch's differ in part.
void warn_camera_mismatch(const GrootCameraOrder& order, const std::string& modality_keys) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (!order.unmatched.empty())
      spdlog::warn(
          "GR00T: the checkpoint's video modality keys {} have no camera for [{}]; the model sees {} view(s) "
          "(as LeRobot, which warns too); rename the cameras (rename_map) to the checkpoint's keys",
          modality_keys, util::quoted_list(order.unmatched), order.cameras.size());
    if (!order.unused.empty())
      spdlog::warn("GR00T: dropping camera(s) [{}]: the checkpoint only consumes {}", util::quoted_list(order.unused),
                   modality_keys);
  });
}

}  // namespace

QwenImageProcessorConfig read_image_processor_config(const fs::path& dir) {
  const fs::path file = dir / "preprocessor_config.json";
  if (!fs::exists(file))
    throw util::DataError(file.string() +
                          " does not exist (Qwen3-VL's image processor settings, which GR00T's "
                          "VLM-encode step reads: patch size, merge size, mean, std)");
  const ordered_json root = io::read_json_file(file, "the image processor's settings");
  QwenImageProcessorConfig c;
  auto integer = [&](const char* key, int64_t& out) {
    if (!root.contains(key)) return;
    if (!root[key].is_number_integer()) throw util::DataError(file.string() + ": '" + key + "' must be an integer");
    out = root[key].get<int64_t>();
  };
  integer("patch_size", c.patch_size);
  integer("merge_size", c.merge_size);
  integer("temporal_patch_size", c.temporal_patch_size);
  if (root.contains("size") && root["size"].is_object()) {
    if (root["size"].contains("shortest_edge")) c.min_pixels = root["size"]["shortest_edge"].get<int64_t>();
    if (root["size"].contains("longest_edge")) c.max_pixels = root["size"]["longest_edge"].get<int64_t>();
  }
  for (auto [key, out] : {std::pair{"image_mean", &c.image_mean}, std::pair{"image_std", &c.image_std}})
    if (root.contains(key)) {
      if (!root[key].is_array() || root[key].size() != 3)
        throw util::DataError(file.string() + ": '" + key + "' must be three numbers");
      *out = root[key].get<std::vector<double>>();
    }
  if (root.contains("rescale_factor")) c.rescale_factor = root["rescale_factor"].get<double>();
  for (auto [key, out] : {std::pair{"do_resize", &c.do_resize}, std::pair{"do_rescale", &c.do_rescale},
                          std::pair{"do_normalize", &c.do_normalize}})
    if (root.contains(key)) *out = root[key].get<bool>();
  return c;
}

std::shared_ptr<GrootProcessorSteps> GrootProcessorSteps::for_policy(const Policy& policy) {
  const auto* groot = dynamic_cast<const GrootPolicy*>(&policy);
  if (!groot)
    throw util::ConfigError("GR00T's processor steps belong to a 'groot' policy, not '" + policy.type() + "'");
  const GrootConfig& c = groot->groot_config();
  const GrootProcessorAssets& assets = groot->geometry().assets;
  auto steps = std::make_shared<GrootProcessorSteps>();
  ordered_json mapping = ordered_json::object();
  for (const auto& [tag, id] : assets.embodiment_mapping) mapping[tag] = id;
  // make_groot_pre_post_processors (:1190-1232): the checkpoint's max_action_horizon, else
  // min(chunk_size, 40); its valid horizon (len(action delta_indices)), else the same.
  const auto& stats = assets.checkpoint_stats;
  const int64_t horizon = assets.max_action_horizon.value_or(std::min(c.chunk_size, kNativeActionHorizon));
  const auto& layout = assets.layout;
  const int64_t valid = layout.valid_action_horizon.value_or(horizon);
  auto optional_int = [](const std::optional<int64_t>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
  const ordered_json cameras =
      layout.video_modality_keys ? ordered_json(*layout.video_modality_keys) : ordered_json(nullptr);
  // LeRobot inlines the sidecar objects for a local base checkpoint ({} when absent), null otherwise.
  const ordered_json raw_stats = assets.local_base ? assets.raw_stats : ordered_json(nullptr);
  const ordered_json modality_config = assets.local_base ? assets.modality_config : ordered_json(nullptr);
  steps->read_pack_config({{"state_horizon", 1},
                           {"action_horizon", horizon},
                           {"valid_action_horizon", valid},
                           {"video_horizon", optional_int(layout.video_horizon)},
                           {"max_state_dim", c.max_state_dim},
                           {"max_action_dim", c.max_action_dim},
                           {"language_key", "task"},
                           {"formalize_language", assets.formalize_language},
                           {"embodiment_tag", c.embodiment_tag},
                           {"embodiment_mapping", mapping},
                           {"normalize_min_max", true},
                           {"state_dropout_prob", 0.0},
                           {"clip_outliers", assets.clip_outliers},
                           {"use_percentiles", assets.use_percentiles},
                           {"video_modality_keys", cameras},
                           {"raw_stats", raw_stats},
                           {"modality_config", modality_config}},
                          "policy 'groot' pack step");
  ordered_json vlm{{"model_name", c.tokenizer_name},
                   {"image_crop_size", assets.image_crop_size},
                   {"image_target_size", assets.image_target_size},
                   {"shortest_image_edge", nullptr},
                   {"crop_fraction", nullptr},
                   {"use_albumentations", false},
                   {"letter_box_transform", false},
                   {"device", c.device.value_or("cpu")}};
  if (assets.shortest_image_edge) vlm["shortest_image_edge"] = *assets.shortest_image_edge;
  if (assets.crop_fraction) vlm["crop_fraction"] = *assets.crop_fraction;
  steps->read_vlm_config(vlm, "policy 'groot' VLM-encode step");
  const int64_t env_action_dim = c.action_feature()->shape.at(0);
  if (stats) {
    // LeRobot normalises a state or action of another width than the checkpoint's groups with their
    // flat stats cut or padded to it (min 0 / max 1): another robot's layout, silently. Refused.
    const auto* state = c.robot_state_feature();
    const int64_t state_dim = state ? state->shape.at(0) : 0;
    if (state_dim != stats->state_dim() || env_action_dim != stats->action_dim())
      throw util::ConfigError(
          "policy 'groot': the base checkpoint's statistics for embodiment '" + c.embodiment_tag + "' describe " +
              std::to_string(stats->state_dim()) + " state and " + std::to_string(stats->action_dim()) +
              " action dims, the policy's features " + std::to_string(state_dim) + " and " +
              std::to_string(env_action_dim),
          "a robot of another layout fine-tunes as a new embodiment (embodiment_tag = \"new_embodiment\", the "
          "dataset's stats)");
    steps->read_decode_config({{"env_action_dim", env_action_dim},
                               {"raw_stats", raw_stats},
                               {"modality_config", modality_config},
                               {"use_percentiles", assets.use_percentiles},
                               {"use_relative_action", false},
                               {"action_decode_transform", c.libero_decode() ? ordered_json("libero") : nullptr}},
                              "policy 'groot' decode step");
  } else {
    steps->read_unpack_config({{"env_action_dim", env_action_dim},
                               {"normalize_min_max", true},
                               {"clip_normalized_action", true},
                               {"libero_gripper_action", c.libero_decode()},
                               {"libero_gripper_binarize", true}},
                              "policy 'groot' unpack step");
  }
  return steps;
}

void GrootProcessorSteps::read_pack_config(const ordered_json& config, const std::string& where) {
  reject_unknown(
      config,
      {"state_horizon", "action_horizon", "valid_action_horizon", "video_horizon", "max_state_dim", "max_action_dim",
       "language_key", "formalize_language", "embodiment_tag", "embodiment_mapping", "normalize_min_max",
       "state_dropout_prob", "clip_outliers", "use_percentiles", "video_modality_keys", "raw_stats", "modality_config"},
      where);
  for (const char* key : {"action_horizon", "valid_action_horizon", "max_state_dim", "max_action_dim"})
    if (config_integer(config, key, where) <= 0) throw util::DataError(where + ": '" + key + "' must be positive");
  config_bool(config, "formalize_language", where);
  config_bool(config, "clip_outliers", where);
  require_value(config, "state_horizon", 1, where, "a state history");
  require_value(config, "language_key", "task", where, "another language key");
  require_value(config, "normalize_min_max", true, where, "unnormalized state and action");
  require_value(config, "state_dropout_prob", 0.0, where, "the preprocessor's state dropout");
  config_bool(config, "use_percentiles", where);
  const auto& frames = config_value(config, "video_horizon", where);
  if (!frames.is_null() && (!frames.is_number_integer() || frames.get<int64_t>() <= 0))
    throw util::DataError(where + ": 'video_horizon' must be null or a positive integer, got " + frames.dump());
  const auto& cameras = config_value(config, "video_modality_keys", where);
  if (!cameras.is_null() &&
      !(cameras.is_array() && std::all_of(cameras.begin(), cameras.end(), [](const auto& k) { return k.is_string(); })))
    throw util::DataError(where + ": 'video_modality_keys' must be null or a list of camera names, got " +
                          cameras.dump());
  const auto& tag = config_value(config, "embodiment_tag", where);
  const auto& mapping = config_value(config, "embodiment_mapping", where);
  if (!tag.is_string() || !mapping.is_object())
    throw util::DataError(where + ": 'embodiment_tag' must be a string and 'embodiment_mapping' an object");
  if (!mapping.contains(tag.get<std::string>()) || !mapping[tag.get<std::string>()].is_number_integer()) {
    std::string known;
    for (const auto& [name, id] : mapping.items()) known += (known.empty() ? "" : ", ") + name;
    // LeRobot maps an unknown tag to id 0 (another robot's embodiment weights) without a word.
    throw util::ConfigError(where + ": embodiment_tag '" + tag.get<std::string>() +
                                "' is not in the embodiment mapping (known: " + known + ")",
                            "fine-tune a new robot with embodiment_tag=new_embodiment");
  }
  pack_stats_ = inline_checkpoint_stats(config, tag.get<std::string>(), where);
  pack_ = config;
}

void GrootProcessorSteps::read_vlm_config(const ordered_json& config, const std::string& where) {
  reject_unknown(config,
                 {"model_name", "image_crop_size", "image_target_size", "shortest_image_edge", "crop_fraction",
                  "use_albumentations", "letter_box_transform", "device"},
                 where);
  require_value(config, "use_albumentations", false, where, "albumentations' image transforms");
  require_value(config, "letter_box_transform", false, where, "letterboxing");
  const auto& name = config_value(config, "model_name", where);
  if (!name.is_string()) throw util::DataError(where + ": 'model_name' must be a folder or hub id");
  image_geometry_ = image_geometry(config, where);
  tokenizer_name_ = name.get<std::string>();
  const auto folder = io::resolve_model_dir(tokenizer_name_, where + " model_name");
  image_processor_ = read_image_processor_config(folder);
  // Loaded here, not at first use: the loader's workers may preprocess batches at the same time.
  prompt_ = std::make_shared<GrootPromptEncoder>(folder);
  vlm_ = config;
  table_.clear();
}

void GrootProcessorSteps::read_unpack_config(const ordered_json& config, const std::string& where) {
  reject_unknown(config,
                 {"env_action_dim", "normalize_min_max", "clip_normalized_action", "libero_gripper_action",
                  "libero_gripper_binarize"},
                 where);
  if (config_integer(config, "env_action_dim", where) < 0)
    throw util::DataError(where + ": 'env_action_dim' must be >= 0");
  require_value(config, "normalize_min_max", true, where, "unnormalized actions");
  config_bool(config, "clip_normalized_action", where);
  config_bool(config, "libero_gripper_action", where);
  config_bool(config, "libero_gripper_binarize", where);
  unpack_ = config;
  decode_ = nullptr;
  decode_stats_.reset();
}

void GrootProcessorSteps::read_decode_config(const ordered_json& config, const std::string& where) {
  reject_unknown(config,
                 {"env_action_dim", "raw_stats", "modality_config", "use_percentiles", "use_relative_action",
                  "action_decode_transform"},
                 where);
  if (config_integer(config, "env_action_dim", where) < 0)
    throw util::DataError(where + ": 'env_action_dim' must be >= 0");
  config_bool(config, "use_percentiles", where);
  require_value(config, "use_relative_action", false, where, "relative N1.7 actions");
  const auto& transform = config_value(config, "action_decode_transform", where);
  if (!transform.is_null() && transform != "libero")
    throw util::DataError(where + ": 'action_decode_transform' must be null or \"libero\", got " + transform.dump());
  // LeRobot's step returns the normalized action unchanged when it has no action groups: refused here.
  auto stats = inline_checkpoint_stats(config, "decode step", where);
  if (!stats)
    throw util::DataError(where + ": the decode step has no checkpoint statistics (raw_stats / modality_config)",
                          "LeRobot would return the model's normalized actions unchanged");
  decode_stats_ = std::move(stats);
  decode_ = config;
  unpack_ = nullptr;
}

ordered_json GrootProcessorSteps::vlm_config(const std::string& device) const {
  ordered_json out = vlm_;
  out["device"] = device;
  return out;
}

const GrootPromptEncoder& GrootProcessorSteps::prompt() const {
  if (!prompt_) throw util::ConfigError("GR00T's VLM-encode step has no tokenizer (its config was not read)");
  return *prompt_;
}

std::vector<std::string> GrootProcessorSteps::languages(const std::vector<std::string>& tasks) const {
  const auto count = static_cast<int64_t>(tasks.size());
  return groot_language_batch(groot_language_batch(tasks, count, pack_.at("formalize_language").get<bool>()), count,
                              false);
}

void GrootProcessorSteps::set_task_table(const std::vector<std::string>& tasks) const {
  table_.clear();
  if (tasks.empty()) return;
  for (const auto& text : languages(tasks)) table_.push_back(prompt().text_ids(text));
}

Batch GrootProcessorSteps::pack(Batch batch, const data::DatasetStats& stats) const {
  GrootPackSizes sizes;
  sizes.max_state_dim = pack_.at("max_state_dim").get<int64_t>();
  sizes.max_action_dim = pack_.at("max_action_dim").get<int64_t>();
  sizes.action_horizon = pack_.at("action_horizon").get<int64_t>();
  sizes.valid_action_horizon = pack_.at("valid_action_horizon").get<int64_t>();
  sizes.clip_outliers = pack_.at("clip_outliers").get<bool>();
  auto state = batch.find("observation.state");
  if (state == batch.end()) throw util::DataError("GR00T's pack step needs 'observation.state'; the batch has none");
  auto raw_state = state->second.dim() == 3 ? state->second.select(1, -1) : state->second;
  const auto state_stats = min_max(stats, "observation.state");
  batch["state"] = groot_pack_state(raw_state, state_stats ? &*state_stats : nullptr, sizes);
  const int64_t rows = raw_state.size(0);
  auto action = batch.find("action");
  if (action != batch.end()) {
    auto is_pad = batch.find("action_is_pad");
    const auto pad = is_pad == batch.end() ? torch::Tensor() : is_pad->second;
    GrootPackedAction packed;
    if (pack_stats_) {
      // The checkpoint's groups normalise the action (LeRobot's horizon and width checks come first).
      const auto& raw = action->second;
      if (raw.dim() == 3 && raw.size(1) > sizes.action_horizon)
        throw util::DataError("GR00T's pack step: action horizon " + std::to_string(raw.size(1)) +
                              " exceeds action_horizon " + std::to_string(sizes.action_horizon));
      if (raw.dim() >= 2 && raw.size(-1) > sizes.max_action_dim)
        throw util::DataError("GR00T's pack step: action dimension " + std::to_string(raw.size(-1)) +
                              " exceeds max_action_dim " + std::to_string(sizes.max_action_dim));
      packed = groot_pack_action(groot_checkpoint_normalize_action(raw, *pack_stats_, sizes.clip_outliers), pad,
                                 nullptr, sizes);
    } else {
      const auto action_stats = min_max(stats, "action");
      packed = groot_pack_action(action->second, pad, action_stats ? &*action_stats : nullptr, sizes);
    }
    batch["action"] = packed.action;
    batch["action_mask"] = packed.action_mask;
  } else {
    batch["action_mask"] = groot_inference_action_mask(rows, sizes, raw_state.device());
  }
  const std::string tag = pack_.at("embodiment_tag").get<std::string>();
  batch["embodiment_id"] = torch::full({rows}, pack_.at("embodiment_mapping").at(tag).get<int64_t>(),
                                       torch::TensorOptions(torch::kInt).device(raw_state.device()));
  return batch;
}

Batch GrootProcessorSteps::encode(Batch batch, const std::vector<std::string>* texts) const {
  std::vector<std::string> keys;
  for (const auto& [key, value] : batch) keys.push_back(key);
  const auto& modality_keys = pack_.at("video_modality_keys");
  std::vector<std::string> cameras;
  if (modality_keys.is_null()) {
    cameras = groot_camera_order(keys);
  } else {
    const auto order = groot_checkpoint_camera_order(keys, modality_keys.get<std::vector<std::string>>());
    cameras = order.cameras;
    if (!order.unmatched.empty() || !order.unused.empty()) warn_camera_mismatch(order, modality_keys.dump());
  }
  if (cameras.empty())
    throw util::DataError("GR00T's VLM-encode step needs the cameras (observation.images.*); the batch has none");
  // Each camera's frames (B, T, C, H, W), aligned to the checkpoint's video horizon (_align_video_horizon:
  // the last frames kept, or the first repeated in front), then through the N1.7 image transform.
  const auto& horizon = pack_.at("video_horizon");
  std::vector<torch::Tensor> frames;
  for (const auto& key : cameras) {
    auto image = batch.at(key);
    if (image.dim() == 4) image = image.unsqueeze(1);
    if (image.dim() != 5)
      throw util::DataError("GR00T's VLM-encode step: camera '" + key +
                            "' must be (B, C, H, W) or (B, T, C, H, W), got " + c10::str(image.sizes()));
    if (!horizon.is_null()) {
      const int64_t want = horizon.get<int64_t>(), have = image.size(1);
      if (have > want) image = image.narrow(1, have - want, want);
      if (have < want) image = torch::cat({image.narrow(1, 0, 1).expand({-1, want - have, -1, -1, -1}), image}, 1);
    }
    const auto uint8 = groot_transform_images_for_vlm(groot_images_to_uint8(image.flatten(0, 1)), image_geometry_);
    frames.push_back(uint8.unflatten(0, {image.size(0), image.size(1)}));
    batch.erase(key);
  }
  // The processor's images are in prompt order: each sample's frames in (timestep, view) order.
  const int64_t rows = frames.front().size(0);
  const auto stacked = torch::stack(frames, 2);  // (B, T, V, C, H, W)
  const int64_t views = stacked.size(1) * stacked.size(2);
  auto pixels = qwen2vl_preprocess_images(stacked.flatten(0, 2), image_processor_);
  const auto& grid = pixels.image_grid_thw;
  const int64_t merge = image_processor_.merge_size;
  const int64_t image_tokens = (grid[0][0] * grid[0][1] * grid[0][2]).item<int64_t>() / (merge * merge);
  batch["pixel_values"] = pixels.pixel_values.reshape({rows, -1, pixels.pixel_values.size(1)});
  batch["image_grid_thw"] = grid.reshape({rows, views, 3});
  std::vector<std::vector<std::int32_t>> given;
  std::vector<const std::vector<std::int32_t>*> ids;
  if (texts) {
    for (const auto& text : languages(*texts)) given.push_back(prompt().text_ids(text));
    for (const auto& row : given) ids.push_back(&row);
  } else {
    auto index = batch.find("task_index");
    if (index == batch.end())
      throw util::ConfigError("GR00T's preprocessor builds the prompt from the task, but the batch has no 'task_index'",
                              "give the task strings: policy:preprocess(batch, {\"pick up the cube\", ...})");
    if (table_.empty())
      throw util::ConfigError("GR00T's preprocessor: the batch gives task_index but no task table was set",
                              "build the policy with lr.policy.new(cfg, dataset), or call policy:set_tasks(dataset)");
    const auto flat = index->second.to(torch::kCPU, torch::kLong).reshape({-1}).contiguous();
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const int64_t k = flat.data_ptr<int64_t>()[i];
      if (k < 0 || k >= static_cast<int64_t>(table_.size()))
        throw util::DataError("GR00T's preprocessor: task_index " + std::to_string(k) + " out of range [0, " +
                              std::to_string(table_.size()) + ")");
      ids.push_back(&table_[static_cast<std::size_t>(k)]);
    }
  }
  if (static_cast<int64_t>(ids.size()) != rows)
    throw util::DataError("GR00T's preprocessor: " + std::to_string(ids.size()) + " task texts for a batch of " +
                          std::to_string(rows));
  const auto tokens = prompt().encode(ids, views, image_tokens);
  const auto device = frames.front().device();
  batch["input_ids"] = tokens.input_ids.to(device);
  batch["attention_mask"] = tokens.attention_mask.to(device);
  return batch;
}

torch::Tensor GrootProcessorSteps::unpack(const torch::Tensor& action, const data::DatasetStats& stats) const {
  if (decode_stats_)
    return groot_checkpoint_decode_action(action, *decode_stats_, decode_.at("env_action_dim").get<int64_t>(),
                                          decode_.at("action_decode_transform") == "libero");
  GrootUnpackOptions options;
  options.env_action_dim = unpack_.at("env_action_dim").get<int64_t>();
  options.clip_normalized_action = unpack_.at("clip_normalized_action").get<bool>();
  options.libero_gripper_action = unpack_.at("libero_gripper_action").get<bool>();
  options.libero_gripper_binarize = unpack_.at("libero_gripper_binarize").get<bool>();
  const auto action_stats = min_max(stats, "action");
  return groot_unpack_action(action, action_stats ? &*action_stats : nullptr, options);
}

std::optional<data::DatasetStats> GrootProcessorSteps::checkpoint_flat_stats() const {
  if (!pack_stats_) return std::nullopt;
  // _load_n1_7_checkpoint_stats' lists, which the pack step's state_dict turns into float32 tensors.
  const auto flat = groot_checkpoint_flat_stats(*pack_stats_);
  data::DatasetStats out;
  for (const auto& [key, modality] : {std::pair{"observation.state", &flat.state}, std::pair{"action", &flat.action}}) {
    if (modality->mean.empty()) continue;
    auto& entry = out[key];
    entry.set("min", groot_stat_tensor(modality->min));
    entry.set("max", groot_stat_tensor(modality->max));
    entry.set("mean", groot_stat_tensor(modality->mean));
    entry.set("std", groot_stat_tensor(modality->std));
  }
  return out;
}

}  // namespace lrhost::policy::groot
