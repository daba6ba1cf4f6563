// Resolving a GR00T policy's geometry and processor settings; see groot_geometry.hpp.
#include "host/policy/groot/groot_geometry.hpp"

#include "host/io/atomic_dir.hpp"
#include "host/io/hf_cache.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::groot {
namespace fs = std::filesystem;

namespace {

nlohmann::json read_object(const fs::path& file, const std::string& what) {
  nlohmann::json object = io::read_json_file(file, what);
  if (!object.is_object()) throw util::ConfigError(file.string() + ": expected a JSON object (" + what + ")");
  return object;
}

std::optional<std::vector<int64_t>> int_pair(const nlohmann::json& kwargs, const char* key, const fs::path& file) {
  if (!kwargs.contains(key) || kwargs[key].is_null()) return std::nullopt;
  const auto& value = kwargs[key];
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() || !value[1].is_number_integer())
    throw util::ConfigError(file.string() + ": processor_kwargs." + key + " must be [height, width] integers, got " +
                            value.dump());
  return std::vector<int64_t>{value[0].get<int64_t>(), value[1].get<int64_t>()};
}

// processor_kwargs entries that LeRobot turns into processing lrhost does not implement.
void refuse_unported(const nlohmann::json& kwargs, const fs::path& file) {
  auto refuse = [&](const std::string& what) {
    throw util::NotImplemented(file.string() + ": " + what + " is not implemented in lrhost (GR00T's " +
                               "checkpoint processing); fine-tune a new embodiment (embodiment_tag = "
                               "\"new_embodiment\", dataset stats)");
  };
  for (const char* flag : {"use_albumentations", "letter_box_transform", "use_relative_action"})
    if (kwargs.value(flag, false) == true) refuse(std::string("processor_kwargs.") + flag + " = true");
  if (kwargs.contains("state_dropout_prob") && kwargs["state_dropout_prob"].is_number() &&
      kwargs["state_dropout_prob"].get<double>() != 0.0)
    refuse("processor_kwargs.state_dropout_prob (the preprocessor's state dropout, drawn from Python's random)");
}

nlohmann::ordered_json member_object(const nlohmann::ordered_json& object, const std::string& key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_object()) return nlohmann::ordered_json::object();
  return object[key];
}

// bool(value) as Python reads a JSON value.
bool truthy(const nlohmann::ordered_json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0.0;
  if (value.is_string() || value.is_structured()) return !value.empty();
  return false;
}

GrootProcessorAssets read_assets(const fs::path& base, const std::string& tag) {
  GrootProcessorAssets assets;
  const fs::path file = base / "processor_config.json";
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  if (fs::exists(file)) {
    assets.from_checkpoint = true;
    root = io::read_json_file(file, "GR00T's processor settings");
    if (!root.is_object())
      throw util::ConfigError(file.string() + ": expected a JSON object (GR00T's processor settings)");
  }
  const nlohmann::ordered_json processor_kwargs = member_object(root, "processor_kwargs");
  const nlohmann::json kwargs = processor_kwargs;
  refuse_unported(kwargs, file);
  assets.use_percentiles = truthy(processor_kwargs.value("use_percentiles", false));
  // LeRobot takes the checkpoint's image geometry only when it names image_target_size
  // (make_groot_pre_post_processors); crop size, shortest edge and crop fraction come with it.
  if (auto size = int_pair(kwargs, "image_target_size", file)) {
    assets.image_target_size = *size;
    if (auto crop = int_pair(kwargs, "image_crop_size", file)) assets.image_crop_size = *crop;
    if (kwargs.contains("shortest_image_edge") && kwargs["shortest_image_edge"].is_number_integer())
      assets.shortest_image_edge = kwargs["shortest_image_edge"].get<int64_t>();
    if (kwargs.contains("crop_fraction") && kwargs["crop_fraction"].is_number())
      assets.crop_fraction = kwargs["crop_fraction"].get<double>();
  }
  // LeRobot takes a non-boolean value as the default (processor_groot.py:205-212).
  if (kwargs.contains("formalize_language") && kwargs["formalize_language"].is_boolean())
    assets.formalize_language = kwargs["formalize_language"].get<bool>();
  if (kwargs.contains("clip_outliers") && kwargs["clip_outliers"].is_boolean())
    assets.clip_outliers = kwargs["clip_outliers"].get<bool>();
  if (kwargs.contains("max_action_horizon") && kwargs["max_action_horizon"].is_number_integer()) {
    assets.max_action_horizon = kwargs["max_action_horizon"].get<int64_t>();
    if (*assets.max_action_horizon <= 0)
      throw util::ConfigError(file.string() + ": processor_kwargs.max_action_horizon must be positive, got " +
                              std::to_string(*assets.max_action_horizon));
  }
  // _load_n1_7_checkpoint_processor_assets (:162-243): statistics.json[tag] (or {}) with
  // modality_configs[tag] (or {}). Modality groups without their statistics are LeRobot's KeyError.
  const fs::path stats_file = base / "statistics.json";
  const nlohmann::ordered_json statistics = fs::exists(stats_file)
                                                ? io::read_json_file(stats_file, "GR00T's checkpoint statistics")
                                                : nlohmann::ordered_json::object();
  if (!statistics.is_object())
    throw util::ConfigError(stats_file.string() + ": expected a JSON object (GR00T's checkpoint statistics)");
  assets.raw_stats = member_object(statistics, tag);
  assets.modality_config = member_object(member_object(processor_kwargs, "modality_configs"), tag);
  assets.layout = groot_checkpoint_layout(assets.modality_config);
  assets.checkpoint_stats =
      parse_groot_checkpoint_stats(nlohmann::ordered_json{{tag, assets.raw_stats}}, root, tag,
                                   stats_file.string() + " / " + file.string() + " (embodiment '" + tag + "')");
  const fs::path ids = base / "embodiment_id.json";
  if (fs::exists(ids)) {
    std::vector<std::pair<std::string, int64_t>> mapping;
    for (const auto& [key, value] : read_object(ids, "GR00T's embodiment ids").items())
      if (value.is_number_integer()) mapping.emplace_back(key, value.get<int64_t>());
    if (!mapping.empty()) assets.embodiment_mapping = std::move(mapping);
  }
  return assets;
}

}  // namespace

nlohmann::json cosmos_reason2_backbone_config() {
  // groot_n1_7.py:751-803, _cosmos_reason2_qwen3_vl_config.
  return {{"image_token_id", 151655},
          {"video_token_id", 151656},
          {"vision_start_token_id", 151652},
          {"vision_end_token_id", 151653},
          {"tie_word_embeddings", true},
          {"text_config",
           {{"attention_bias", false},
            {"attention_dropout", 0.0},
            {"bos_token_id", 151643},
            {"eos_token_id", 151645},
            {"head_dim", 128},
            {"hidden_act", "silu"},
            {"hidden_size", 2048},
            {"initializer_range", 0.02},
            {"intermediate_size", 6144},
            {"max_position_embeddings", 262144},
            {"num_attention_heads", 16},
            {"num_hidden_layers", 28},
            {"num_key_value_heads", 8},
            {"rms_norm_eps", 1e-6},
            {"rope_scaling", {{"mrope_interleaved", true}, {"mrope_section", {24, 20, 20}}, {"rope_type", "default"}}},
            {"rope_theta", 5000000},
            {"tie_word_embeddings", true},
            {"vocab_size", 151936}}},
          {"vision_config",
           {{"deepstack_visual_indexes", {5, 11, 17}},
            {"depth", 24},
            {"hidden_act", "gelu_pytorch_tanh"},
            {"hidden_size", 1024},
            {"in_channels", 3},
            {"initializer_range", 0.02},
            {"intermediate_size", 4096},
            {"num_heads", 16},
            {"num_position_embeddings", 2304},
            {"out_hidden_size", 2048},
            {"patch_size", 16},
            {"spatial_merge_size", 2},
            {"temporal_patch_size", 2}}}};
}

void check_padded_dims(const GrootConfig& config, const GrootGeometry& geometry) {
  const auto& head = geometry.model.head;
  if (head.max_state_dim != config.max_state_dim || head.max_action_dim != config.max_action_dim)
    throw util::ConfigError("policy 'groot': max_state_dim / max_action_dim (" + std::to_string(config.max_state_dim) +
                                " / " + std::to_string(config.max_action_dim) + ") differ from the model's (" +
                                std::to_string(head.max_state_dim) + " / " + std::to_string(head.max_action_dim) +
                                ", " + geometry.source + ")",
                            "set policy.max_state_dim / max_action_dim to the model's");
}

GrootGeometry resolve_geometry(const GrootConfig& config) {
  GrootGeometry g;
  // LeRobot reads the checkpoint's sidecars only from a local folder (is_raw_groot_n1_7_checkpoint);
  // a hub id is still resolved here for its config.json and weights.
  const bool base_is_folder = fs::is_directory(config.base_model_path);
  fs::path geometry_dir;
  if (!config.geometry.empty()) geometry_dir = io::resolve_model_dir(config.geometry, "policy.geometry");
  try {
    g.base_dir = io::resolve_model_dir(config.base_model_path, "policy.base_model_path");
  } catch (const util::ConfigError&) {
    if (geometry_dir.empty() || !fs::exists(geometry_dir / "config.json")) throw;
  }
  if (!g.base_dir.empty() && !fs::exists(g.base_dir / "config.json")) {
    if (geometry_dir.empty() || !fs::exists(geometry_dir / "config.json"))
      throw util::ConfigError("policy.base_model_path '" + config.base_model_path + "': " +
                              (g.base_dir / "config.json").string() + " does not exist (GR00T's GR00TN17Config)");
    g.base_dir.clear();
  }
  if (!geometry_dir.empty() && fs::exists(geometry_dir / "config.json")) {
    g.model_config = read_object(geometry_dir / "config.json", "GR00T's model config (policy.geometry)");
    g.source = "policy.geometry '" + config.geometry + "'";
  } else {
    g.model_config = read_object(g.base_dir / "config.json", "GR00T's model config (policy.base_model_path)");
    g.source = "policy.base_model_path '" + config.base_model_path + "'";
  }
  if (g.model_config.contains("type"))
    throw util::ConfigError(g.source + ": its config.json is a LeRobot policy config (\"type\": " +
                                g.model_config["type"].dump() + "), not a GR00T N1.7 base checkpoint's",
                            "load a LeRobot GR00T checkpoint with policy.pretrained_path");
  const std::string model_name = g.model_config.value("model_name", std::string(kCosmosReason2));
  if (!geometry_dir.empty() && fs::exists(geometry_dir / "backbone_config.json")) {
    g.backbone_config = read_object(geometry_dir / "backbone_config.json", "the backbone's Qwen3-VL config");
  } else if (model_name == kCosmosReason2 || model_name == std::string(kCosmosReason2) + "/") {
    g.backbone_config = cosmos_reason2_backbone_config();
  } else {
    throw util::NotImplemented(g.source + ": model_name '" + model_name +
                               "': only Cosmos-Reason2-2B's backbone is built (as in LeRobot 0.6.1, which loads "
                               "other backbones through transformers)");
  }
  g.model = GrootModelConfig::from_json(g.model_config, g.backbone_config, g.source);
  if (base_is_folder) {
    g.assets = read_assets(config.base_model_path, config.embodiment_tag);
    g.assets.local_base = true;
  }
  if (!geometry_dir.empty() && !base_is_folder && fs::exists(geometry_dir / "processor_config.json"))
    g.assets = read_assets(geometry_dir, config.embodiment_tag);
  return g;
}

}  // namespace lrhost::policy::groot
