// SmolVLA config: strict reading, LeRobot's validation, and config.json output.
#include "host/policy/smolvla/smolvla_config.hpp"

#include <algorithm>

#include "host/config/config_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::smolvla {
namespace {

const char* kWhere = "policy 'smolvla'";

using util::ConfigError;

}  // namespace

SmolVLAConfig SmolVLAConfig::from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features) {
  config::ConfigReader reader(table, kWhere);
  PolicyFieldReader fields(reader, table, kWhere);
  fields.expect_type("smolvla");
  SmolVLAConfig c;
  c.read(reader, fields, dataset_features);

  c.chunk_size = reader.integer("chunk_size", c.chunk_size);
  c.n_action_steps = reader.integer("n_action_steps", c.n_action_steps);
  c.normalization_mapping = fields.normalization_mapping("normalization_mapping", c.normalization_mapping);
  c.max_state_dim = reader.integer("max_state_dim", c.max_state_dim);
  c.max_action_dim = reader.integer("max_action_dim", c.max_action_dim);
  if (const auto* resize = fields.nullable("resize_imgs_with_padding")) {
    if (!resize->is_array() || resize->size() != 2 || !(*resize)[0].is_number_integer() ||
        !(*resize)[1].is_number_integer())
      fields.wrong_type("resize_imgs_with_padding", "[width, height] or null", *resize);
    c.resize_imgs_with_padding = {(*resize)[0].get<int64_t>(), (*resize)[1].get<int64_t>()};
  } else if (table.is_object() && table.contains("resize_imgs_with_padding")) {
    c.resize_imgs_with_padding.clear();  // explicit null: no resize
  }
  c.empty_cameras = reader.integer("empty_cameras", c.empty_cameras);
  c.adapt_to_pi_aloha = reader.boolean("adapt_to_pi_aloha", c.adapt_to_pi_aloha);
  c.use_delta_joint_actions_aloha = reader.boolean("use_delta_joint_actions_aloha", c.use_delta_joint_actions_aloha);
  c.tokenizer_max_length = reader.integer("tokenizer_max_length", c.tokenizer_max_length);
  c.num_steps = reader.integer("num_steps", c.num_steps);
  c.use_cache = reader.boolean("use_cache", c.use_cache);
  c.freeze_vision_encoder = reader.boolean("freeze_vision_encoder", c.freeze_vision_encoder);
  c.train_expert_only = reader.boolean("train_expert_only", c.train_expert_only);
  c.train_state_proj = reader.boolean("train_state_proj", c.train_state_proj);
  c.optimizer_lr = reader.number("optimizer_lr", c.optimizer_lr);
  c.optimizer_betas = reader.number_list("optimizer_betas", c.optimizer_betas);
  c.optimizer_eps = reader.number("optimizer_eps", c.optimizer_eps);
  c.optimizer_weight_decay = reader.number("optimizer_weight_decay", c.optimizer_weight_decay);
  c.optimizer_grad_clip_norm = reader.number("optimizer_grad_clip_norm", c.optimizer_grad_clip_norm);
  c.scheduler_warmup_steps = reader.integer("scheduler_warmup_steps", c.scheduler_warmup_steps);
  c.scheduler_decay_steps = reader.integer("scheduler_decay_steps", c.scheduler_decay_steps);
  c.scheduler_decay_lr = reader.number("scheduler_decay_lr", c.scheduler_decay_lr);
  c.vlm_model_name = reader.string("vlm_model_name", c.vlm_model_name);
  c.load_vlm_weights = reader.boolean("load_vlm_weights", c.load_vlm_weights);
  c.add_image_special_tokens = reader.boolean("add_image_special_tokens", c.add_image_special_tokens);
  c.attention_mode = reader.string("attention_mode", c.attention_mode);
  c.prefix_length = reader.integer("prefix_length", c.prefix_length);
  c.pad_language_to = reader.choice("pad_language_to", c.pad_language_to, {"longest", "max_length"});
  c.num_expert_layers = reader.integer("num_expert_layers", c.num_expert_layers);
  c.num_vlm_layers = reader.integer("num_vlm_layers", c.num_vlm_layers);
  c.self_attn_every_n_layers = reader.integer("self_attn_every_n_layers", c.self_attn_every_n_layers);
  c.expert_width_multiplier = reader.number("expert_width_multiplier", c.expert_width_multiplier);
  c.min_period = reader.number("min_period", c.min_period);
  c.max_period = reader.number("max_period", c.max_period);
  if (const auto* rtc = fields.nullable("rtc_config"))
    throw util::NotImplemented(std::string(kWhere) + ": 'rtc_config' = " + rtc->dump() +
                               ": real-time chunking is not implemented in lrhost; use null");
  c.compile_model = reader.boolean("compile_model", c.compile_model);
  c.compile_mode = reader.string("compile_mode", c.compile_mode);
  c.cache_vision_features = reader.boolean("cache_vision_features", c.cache_vision_features);
  c.vision_cache_max_gib = reader.number("vision_cache_max_gib", c.vision_cache_max_gib);
  reader.reject_unknown();

  // validate_features: the empty cameras are VISUAL inputs (3, 480, 640), added once.
  for (int64_t i = 0; i < c.empty_cameras; ++i) {
    std::string key = "observation.images.empty_camera_" + std::to_string(i);
    bool present = std::any_of(c.input_features.begin(), c.input_features.end(),
                               [&](const PolicyFeature& f) { return f.key == key; });
    if (!present) c.input_features.push_back({key, "VISUAL", {3, 480, 640}});
  }
  c.validate();
  return c;
}

std::optional<std::pair<int64_t, int64_t>> SmolVLAConfig::resize_height_width() const {
  if (resize_imgs_with_padding.empty()) return std::nullopt;
  return std::make_pair(resize_imgs_with_padding[1], resize_imgs_with_padding[0]);
}

void SmolVLAConfig::validate() const {
  const std::string where = kWhere;
  auto fail = [&](const std::string& message, const std::string& hint = {}) {
    throw ConfigError(where + ": " + message, hint);
  };
  auto not_implemented = [&](const std::string& message) {
    throw util::NotImplemented(where + ": " + message + " is not implemented in lrhost");
  };
  // configuration_smolvla.py __post_init__.
  if (n_action_steps > chunk_size)
    fail("'n_action_steps' (" + std::to_string(n_action_steps) + ") must not exceed 'chunk_size' (" +
         std::to_string(chunk_size) + "), the number of actions predicted per invocation");
  if (use_delta_joint_actions_aloha)
    fail("'use_delta_joint_actions_aloha' is not ported in LeRobot either (it raises NotImplementedError); use false");

  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) fail(std::string("'") + key + "' must be a positive integer, got " + std::to_string(value));
  };
  positive("chunk_size", chunk_size);
  positive("n_action_steps", n_action_steps);
  positive("max_state_dim", max_state_dim);
  positive("max_action_dim", max_action_dim);
  positive("tokenizer_max_length", tokenizer_max_length);
  positive("num_steps", num_steps);
  positive("num_vlm_layers", num_vlm_layers);
  if (empty_cameras < 0) fail("'empty_cameras' must be >= 0, got " + std::to_string(empty_cameras));
  if (n_obs_steps != 1)
    fail("SmolVLA reads one observation step: 'n_obs_steps' must be 1, got " + std::to_string(n_obs_steps));
  if (!resize_imgs_with_padding.empty() && (resize_imgs_with_padding[0] <= 0 || resize_imgs_with_padding[1] <= 0))
    fail("'resize_imgs_with_padding' must be two positive sizes [width, height] or null");
  if (!(expert_width_multiplier > 0)) fail("'expert_width_multiplier' must be > 0");
  if (!(min_period > 0 && max_period > 0)) fail("'min_period' and 'max_period' must be > 0");
  if (optimizer_betas.size() != 2) fail("'optimizer_betas' must be two numbers [beta1, beta2]");
  if (attention_mode != "cross_attn" && attention_mode != "self_attn")
    fail("'attention_mode' must be 'cross_attn' or 'self_attn', got '" + attention_mode + "'");
  if (!(vision_cache_max_gib > 0)) fail("'vision_cache_max_gib' must be > 0");
  if (cache_vision_features && !freeze_vision_encoder && !train_expert_only)
    fail(
        "'cache_vision_features' needs a frozen vision tower (freeze_vision_encoder or train_expert_only): a "
        "trainable tower's output changes every step",
        "set policy.cache_vision_features=false");
  if (!use_cache) fail("'use_cache' must be true: the cross-attention expert layers read the prefix from the cache");

  // What lrhost does not implement (LeRobot has it): say so instead of computing something else.
  if (adapt_to_pi_aloha) not_implemented("'adapt_to_pi_aloha' = true (Aloha joint flips and gripper remapping)");
  if (add_image_special_tokens) not_implemented("'add_image_special_tokens' = true");
  if (compile_model) not_implemented("'compile_model' = true (torch.compile)");

  // validate_features and the features SmolVLA reads.
  if (image_features().empty())
    fail("input_features needs at least one VISUAL feature (observation.images.*)",
         "SmolVLA's prefix starts with the camera tokens; build it from a dataset with a camera");
  if (!robot_state_feature()) fail("input_features needs 'observation.state' (STATE)");
  if (!action_feature()) fail("output_features needs an ACTION feature named 'action'");
  for (const auto* feature : {robot_state_feature(), action_feature()})
    if (feature->shape.size() != 1)
      fail("'" + feature->key + "' must be a vector feature (shape [n]), got " + nlohmann::json(feature->shape).dump());
  if (robot_state_feature()->shape[0] > max_state_dim)
    fail("'observation.state' has " + std::to_string(robot_state_feature()->shape[0]) +
             " dimensions, more than 'max_state_dim' = " + std::to_string(max_state_dim),
         "LeRobot pads the state to max_state_dim and never truncates; raise max_state_dim");
  if (action_feature()->shape[0] > max_action_dim)
    fail("'action' has " + std::to_string(action_feature()->shape[0]) +
             " dimensions, more than 'max_action_dim' = " + std::to_string(max_action_dim),
         "LeRobot pads actions to max_action_dim and never truncates; raise max_action_dim");
  for (const auto& camera : image_features())
    if (camera.shape.size() != 3 || camera.shape[0] != 3)
      fail("camera '" + camera.key + "' must have shape [3, H, W], got " + nlohmann::json(camera.shape).dump());
}

nlohmann::ordered_json SmolVLAConfig::to_json() const {
  nlohmann::ordered_json j;
  j["type"] = "smolvla";
  write(j);
  j["chunk_size"] = chunk_size;
  j["n_action_steps"] = n_action_steps;
  j["normalization_mapping"] = normalization_mapping_json(normalization_mapping);
  j["max_state_dim"] = max_state_dim;
  j["max_action_dim"] = max_action_dim;
  j["resize_imgs_with_padding"] = resize_imgs_with_padding.empty() ? nlohmann::ordered_json(nullptr)
                                                                   : nlohmann::ordered_json(resize_imgs_with_padding);
  j["empty_cameras"] = empty_cameras;
  j["adapt_to_pi_aloha"] = adapt_to_pi_aloha;
  j["use_delta_joint_actions_aloha"] = use_delta_joint_actions_aloha;
  j["tokenizer_max_length"] = tokenizer_max_length;
  j["num_steps"] = num_steps;
  j["use_cache"] = use_cache;
  j["freeze_vision_encoder"] = freeze_vision_encoder;
  j["train_expert_only"] = train_expert_only;
  j["train_state_proj"] = train_state_proj;
  j["optimizer_lr"] = optimizer_lr;
  j["optimizer_betas"] = optimizer_betas;
  j["optimizer_eps"] = optimizer_eps;
  j["optimizer_weight_decay"] = optimizer_weight_decay;
  j["optimizer_grad_clip_norm"] = optimizer_grad_clip_norm;
  j["scheduler_warmup_steps"] = scheduler_warmup_steps;
  j["scheduler_decay_steps"] = scheduler_decay_steps;
  j["scheduler_decay_lr"] = scheduler_decay_lr;
  j["vlm_model_name"] = vlm_model_name;
  j["load_vlm_weights"] = load_vlm_weights;
  j["add_image_special_tokens"] = add_image_special_tokens;
  j["attention_mode"] = attention_mode;
  j["prefix_length"] = prefix_length;
  j["pad_language_to"] = pad_language_to;
  j["num_expert_layers"] = num_expert_layers;
  j["num_vlm_layers"] = num_vlm_layers;
  j["self_attn_every_n_layers"] = self_attn_every_n_layers;
  j["expert_width_multiplier"] = expert_width_multiplier;
  j["min_period"] = min_period;
  j["max_period"] = max_period;
  j["rtc_config"] = nullptr;
  j["compile_model"] = compile_model;
  j["compile_mode"] = compile_mode;
  return j;
}

nlohmann::ordered_json SmolVLAConfig::to_recipe_json() const {
  auto j = to_json();
  j["cache_vision_features"] = cache_vision_features;
  j["vision_cache_max_gib"] = vision_cache_max_gib;
  return j;
}


// vlm_model_name is not among them: it names where the VLM's config and tokenizer are (offline, a
// local copy of the same VLM), and loading checks every weight's shape anyway.
const std::vector<std::string>& SmolVLAConfig::weight_shape_fields() {
  static const std::vector<std::string> fields{"max_state_dim", "max_action_dim", "num_vlm_layers", "num_expert_layers", "self_attn_every_n_layers", "expert_width_multiplier"};
  return fields;
}

}  // namespace lrhost::policy::smolvla
