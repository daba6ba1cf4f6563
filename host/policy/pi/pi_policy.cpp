// PiPolicy: batch preparation, the loss, the inference queue and the presets of pi0/pi05.
#include "host/policy/pi/pi_policy.hpp"

#include "host/policy/per_sample_loss.hpp"
#include "host/policy/pi/pi_flops.hpp"

#include <algorithm>
#include <numeric>

#include <spdlog/spdlog.h>

#include "host/data/mixture/padded_dimensions.hpp"
#include "host/io/hf_cache.hpp"
#include "host/nn/image_preprocess.hpp"
#include "host/policy/common/flow_matching.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/rename_map.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::pi {
namespace {

const std::string kCameraPrefix = "observation.images.";
const std::string kPaddingMaskSuffix = "_padding_mask";
const std::string kEmptyCameraPrefix = "observation.images.empty_camera_";
constexpr const char* kLanguageTokens = "observation.language.tokens";
constexpr const char* kLanguageMask = "observation.language.attention_mask";

std::string type_name(PiVariant variant) {
  return variant == PiVariant::pi0 ? "pi0" : "pi05";
}

// LeRobot's pad_vector: zero-pad the last dimension, never truncate.
torch::Tensor pad_last_dim(const torch::Tensor& x, int64_t size) {
  if (x.size(-1) >= size) return x;
  return torch::constant_pad_nd(x, {0, size - x.size(-1)});
}

}  // namespace

PiGeometry pi_geometry_of(const PiConfigFields& config, PiVariant variant) {
  return pi_geometry(config.paligemma_variant, config.action_expert_variant, config.image_resolution[0],
                     variant == PiVariant::pi05, config.geometry, "policy '" + type_name(variant) + "'");
}

PiPolicy::PiPolicy(PiVariant variant, PiConfigFields config, std::optional<PiGeometry> geometry)
    : variant_(variant),
      config_(std::move(config)),
      geometry_(geometry ? std::move(*geometry) : pi_geometry_of(config_, variant)) {
  if (config_.image_resolution[0] != config_.image_resolution[1])
    throw util::ConfigError("policy '" + type_name(variant) +
                            "': 'image_resolution' must be square (PaliGemma's "
                            "SigLIP), got " +
                            nlohmann::json(config_.image_resolution).dump());
  model_ = register_module("model", PiFlowMatching(variant, config_, geometry_));
  reset();
}

torch::Tensor PiPolicy::prepare_image(const std::string& key, const torch::Tensor& batch_image) const {
  auto image = batch_image.dim() == 5 ? batch_image.select(1, -1) : batch_image;
  if (image.dim() != 4 || image.size(1) != 3 || !torch::isFloatingType(image.scalar_type()))
    throw util::DataError(type_name(variant_) + " policy: camera '" + key +
                          "' must be float (B, 3, H, W) in [0, 1], got " +
                          std::string(c10::toString(image.scalar_type())) + " " + c10::str(image.sizes()));
  // _preprocess_images: fp32; resize_with_pad_torch (centred padding, clamp to [0, 1]) only when not
  // at image_resolution; then ·2 − 1.
  return nn::resize_with_pad_signed(image.to(torch::kFloat32), config_.image_resolution[0], config_.image_resolution[1],
                                    {.placement = nn::PadPlacement::centered, .clamp_to_unit = true});
}

PiInputs PiPolicy::prepare_inputs(const Batch& batch) const {
  const std::string type = type_name(variant_);
  const auto cameras = config_.image_features();
  // LeRobot's default PI0Config()/PI05Config() has no features at all (config.json's {}): a policy
  // built from it without a dataset has no camera to feed, which LeRobot also refuses at forward.
  if (cameras.empty())
    throw util::ConfigError(type + " policy: its input_features have no camera (VISUAL observation.images.*)",
                            "fine-tune it on a dataset with cameras (an empty input_features is taken from the "
                            "dataset), or give the cameras in config.json's input_features");
  for (const auto& [key, tensor] : batch) {
    if (!key.starts_with(kCameraPrefix) || key.ends_with(kPaddingMaskSuffix)) continue;
    if (std::none_of(cameras.begin(), cameras.end(), [&](const PolicyFeature& f) { return f.key == key; })) {
      std::string names;
      for (const auto& c : cameras) names += (names.empty() ? "'" : ", '") + c.key + "'";
      throw util::ConfigError(
          type + " policy: the batch has camera '" + key + "', which is not one of the policy's cameras (" + names +
              ")",
          "map dataset cameras onto the policy's with rename_map, e.g. " +
              suggested_rename_map(processors() ? processors()->rename_map() : RenameMap{}, key, cameras.front().key) +
              ", or drop it from the batch");
    }
  }
  PiInputs inputs;
  std::vector<std::string> missing;
  for (const auto& camera : cameras) {
    auto found = batch.find(camera.key);
    if (found == batch.end()) {
      missing.push_back(camera.key);
      continue;
    }
    inputs.images.push_back(prepare_image(camera.key, found->second));
    // LeRobot's pi0/pi05 read no `_padding_mask`; a mixture's samples without this camera carry one
    // (their frames are black, which prepare_image makes the empty camera's -1), so they are masked
    // out as LeRobot's empty cameras are.
    auto present = batch.find(data::camera_padding_mask_key(camera.key));
    inputs.image_masks.push_back(present != batch.end()
                                     ? present->second.to(torch::kBool).to(found->second.device())
                                     : torch::ones({inputs.images.back().size(0)},
                                                   torch::TensorOptions(torch::kBool).device(found->second.device())));
  }
  if (inputs.images.empty())
    throw util::ConfigError(type + " policy: none of the policy's cameras is in the batch (expected '" +
                            cameras.front().key + "'" + (cameras.size() > 1 ? ", ..." : "") + ")");
  // LeRobot turns every missing camera into an empty one (all -1, masked out), appended after the
  // present ones: fine-tuning pi05_base's three cameras on a two-camera robot relies on it. A real
  // camera (not an empty_camera_<i>) missing is said once, since a misnamed key looks the same.
  for (const auto& key : missing) {
    if (!key.starts_with(kEmptyCameraPrefix) && warned_missing_cameras_.insert(key).second)
      spdlog::warn(
          "{} policy: camera '{}' is not in the batch: it is fed as an empty camera (all -1, masked out), "
          "as LeRobot does; map a dataset camera onto it with rename_map if it should see one",
          type, key);
    inputs.images.push_back(torch::full_like(inputs.images.back(), -1.0));
    inputs.image_masks.push_back(torch::zeros_like(inputs.image_masks.back()));
  }
  auto tokens = batch.find(kLanguageTokens);
  auto mask = batch.find(kLanguageMask);
  if (tokens == batch.end() || mask == batch.end())
    throw util::ConfigError(type + " policy: the batch has no '" + kLanguageTokens + "' / '" + kLanguageMask + "'",
                            "preprocess the batch with the policy's processors (policy:preprocess(batch)): they "
                            "tokenize the task of each frame");
  inputs.language_tokens = tokens->second;
  inputs.language_masks = mask->second.to(torch::kBool);
  if (variant_ == PiVariant::pi0) {
    auto state = require_input(batch, "observation.state", type);
    if (state.dim() > 2) state = state.select(1, -1);
    inputs.state = pad_last_dim(state, config_.max_state_dim);
  }
  return inputs;
}

PolicyOutput PiPolicy::forward(const Batch& batch) {
  const std::string type = type_name(variant_);
  auto inputs = prepare_inputs(batch);
  auto actions = pad_last_dim(require_input(batch, "action", type), config_.max_action_dim);
  // LeRobot's order: the noise first (device generator), then the time (CPU generator).
  auto noise_entry = batch.find("noise");
  auto noise =
      noise_entry != batch.end() ? noise_entry->second : common::sample_noise(actions.sizes(), actions.device());
  auto time_entry = batch.find("time");
  auto time = time_entry != batch.end() ? time_entry->second
                                        : common::sample_time_beta(actions.size(0), actions.device(),
                                                                   {.alpha = config_.time_sampling_beta_alpha,
                                                                    .beta = config_.time_sampling_beta_beta,
                                                                    .scale = config_.time_sampling_scale,
                                                                    .offset = config_.time_sampling_offset});
  auto losses = model_->forward(inputs, actions, noise, time);
  const int64_t action_dim = config_.action_feature()->shape[0];
  losses = losses.slice(-1, 0, action_dim);
  // A plain mean: LeRobot 0.6.1's pi0/pi05 do not mask padded action steps (action_is_pad is ignored).
  // A mixture's padded action dimensions are left out of it (they have no data).
  PolicyOutput out;
  auto real = data::real_dimension_weights(batch, "action", action_dim);
  if (!real.defined()) {
    out.loss = losses.mean();
  } else {
    real = real.to(losses.device()).expand_as(losses);
    out.loss = (losses * real).sum() / real.sum().clamp_min(1);
  }
  out.parts[kPerSampleLoss] = per_sample_mean(losses, real);
  return out;
}

torch::Tensor PiPolicy::predict_action_chunk(const Batch& batch) {
  torch::NoGradGuard no_grad;
  eval();
  auto inputs = prepare_inputs(batch);
  const auto device = inputs.images.front().device();
  auto noise_entry = batch.find("noise");
  auto noise =
      noise_entry != batch.end()
          ? noise_entry->second
          : common::sample_noise({inputs.images.front().size(0), config_.chunk_size, config_.max_action_dim}, device);
  auto actions = model_->sample_actions(inputs, noise);
  return actions.slice(-1, 0, config_.action_feature()->shape[0]);
}

torch::Tensor PiPolicy::select_action(const Batch& batch) {
  torch::NoGradGuard no_grad;
  eval();
  return action_queue_.next(config_.n_action_steps, [&] { return predict_action_chunk(batch); });
}

nlohmann::ordered_json pi_optimizer_preset(const PiConfigFields& config) {
  return {{"type", "adamw"},
          {"lr", config.optimizer_lr},
          {"weight_decay", config.optimizer_weight_decay},
          {"betas", config.optimizer_betas},
          {"eps", config.optimizer_eps},
          {"grad_clip_norm", config.optimizer_grad_clip_norm}};
}

nlohmann::ordered_json pi_scheduler_preset(const PiConfigFields& config) {
  // CosineDecayWithWarmupSchedulerConfig(peak_lr=optimizer_lr, decay_lr, warmup, decay), shrunk for
  // shorter runs by the recipe's total steps (optim/scheduler.hpp), as for SmolVLA.
  return {{"type", "cosine_decay_with_warmup"},
          {"warmup_steps", config.scheduler_warmup_steps},
          {"decay_steps", config.scheduler_decay_steps},
          {"decay_lr_ratio", config.scheduler_decay_lr / config.optimizer_lr}};
}

nlohmann::ordered_json PiPolicy::optimizer_preset() const {
  return pi_optimizer_preset(config_);
}
nlohmann::ordered_json PiPolicy::scheduler_preset() const {
  return pi_scheduler_preset(config_);
}

std::map<std::string, std::string> PiPolicy::normalization_mapping() const {
  return {config_.normalization_mapping.begin(), config_.normalization_mapping.end()};
}

std::map<std::string, std::vector<int64_t>> PiPolicy::delta_indices() const {
  std::vector<int64_t> steps(static_cast<std::size_t>(config_.chunk_size));
  std::iota(steps.begin(), steps.end(), 0);
  return {{config_.action_feature()->key, steps}};
}

std::optional<LanguageSettings> PiPolicy::language_settings() const {
  auto dir = io::resolve_model_dir(config_.tokenizer_name, "policy." + type_name(variant_) + " tokenizer_name");
  return LanguageSettings{config_.tokenizer_name, dir, config_.tokenizer_max_length, "max_length"};
}

std::vector<std::string> PiPolicy::adapt_pretrained_tensors(
    std::vector<std::pair<std::string, torch::Tensor>>& tensors) const {
  const std::string model = "model.";
  const std::string embed = "model.paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight";
  const std::string vlm_head = "model.paligemma_with_expert.paligemma.lm_head.weight";
  const std::string expert_head = "model.paligemma_with_expert.gemma_expert.lm_head.weight";
  std::vector<std::string> notes;
  auto renamed = [](std::string key, const std::string& from, const std::string& to) {
    return key.starts_with(from) ? to + key.substr(from.size()) : key;
  };
  std::size_t unprefixed = 0, renames = 0, dropped = 0;
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& [name, tensor] : tensors) {
    std::string key = name;
    if (!key.starts_with(model)) {
      key = model + key;
      ++unprefixed;
    }
    const std::string before = key;
    if (variant_ == PiVariant::pi0) {
      key = renamed(key, "model.time_mlp_in.", "model.action_time_mlp_in.");
      key = renamed(key, "model.time_mlp_out.", "model.action_time_mlp_out.");
    } else {
      key = renamed(key, "model.action_time_mlp_in.", "model.time_mlp_in.");
      key = renamed(key, "model.action_time_mlp_out.", "model.time_mlp_out.");
      if (key.starts_with("model.state_proj.")) {
        ++dropped;
        continue;
      }
    }
    if (key != before) ++renames;
    out.emplace_back(key, tensor);
  }
  if (unprefixed > 0)
    notes.push_back(std::to_string(unprefixed) + " key(s) without the 'model.' prefix (openpi's layout): prefixed");
  if (renames > 0)
    notes.push_back(
        std::to_string(renames) + " key(s) renamed to " + type_name(variant_) + "'s time MLP names (" +
        (variant_ == PiVariant::pi0 ? "time_mlp_* -> action_time_mlp_*" : "action_time_mlp_* -> time_mlp_*") + ")");
  if (dropped > 0)
    notes.push_back(std::to_string(dropped) + " state_proj tensor(s) dropped: pi05 has no state projection");
  auto find = [&](const std::string& key) {
    return std::find_if(out.begin(), out.end(), [&](const auto& entry) { return entry.first == key; });
  };
  if (find(embed) == out.end() && find(vlm_head) != out.end()) {
    out.emplace_back(embed, find(vlm_head)->second);
    notes.push_back("no '" + embed + "': taken from '" + vlm_head + "' (openpi ties them)");
  }
  if (find(expert_head) == out.end()) {
    const auto& head = model_->paligemma_with_expert->gemma_expert->lm_head->weight;
    out.emplace_back(expert_head, torch::zeros({1}, head.options().requires_grad(false)).expand(head.sizes()));
    notes.push_back("no '" + expert_head + "': zeros (the expert's vocabulary head is never computed)");
  }
  if (!notes.empty()) tensors = std::move(out);
  return notes;
}

std::vector<std::pair<std::string, std::string>> PiPolicy::pretrained_extra_files() const {
  if (!geometry_.custom) return {};
  return {{kGeometryFile, geometry_to_json(geometry_).dump(2)}};
}

std::optional<double> PiPolicy::training_flops_per_sample() const {
  return pi_training_flops_per_sample(variant_, config_, geometry_,
                                      static_cast<int64_t>(config_.image_features().size()));
}

nlohmann::ordered_json PiPolicy::rebuild_config() const {
  auto table = config();
  if (!config_.geometry.empty()) table["geometry"] = config_.geometry;
  // A loaded folder names its tokenizer in the preprocessor's tokenizer step, not in config.json.
  if (processors() && processors()->language_settings())
    table["tokenizer_name"] = processors()->language_settings()->tokenizer_name;
  return table;
}

}  // namespace lrhost::policy::pi
