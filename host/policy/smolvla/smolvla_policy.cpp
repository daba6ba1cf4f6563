// SmolVLAPolicy: batch preparation, loss reduction, inference queue, dtypes and presets.
#include "host/policy/smolvla/smolvla_policy.hpp"

#include <ATen/autocast_mode.h>

#include <algorithm>
#include <numeric>

#include "host/data/mixture/padded_dimensions.hpp"
#include "host/io/hf_cache.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/nn/image_preprocess.hpp"
#include "host/nn/llama_model.hpp"
#include "host/nn/module_weights.hpp"
#include "host/policy/per_sample_loss.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/rename_map.hpp"
#include "host/policy/smolvla/smolvla_flops.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::smolvla {
namespace fs = std::filesystem;

namespace {

const char* kType = "smolvla";
const std::string kCameraPrefix = "observation.images.";
const std::string kPaddingMaskSuffix = "_padding_mask";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

SmolVLAPolicy::SmolVLAPolicy(SmolVLAConfig config, fs::path vlm_dir)
    : config_(std::move(config)), vlm_dir_(std::move(vlm_dir)), vlm_config_(nn::SmolVLMConfig::read(vlm_dir_)) {
  config_.validate();
  model_ = register_module("model", VLAFlowMatching(config_, vlm_config_));

  // From-scratch initialisation as transformers' _init_weights does for the VLM and the expert; the
  // expert's cross-attention k/v and the five heads are plain nn.Linear in LeRobot (PyTorch's init).
  // Skipped while building for file-backed loading (nn/deferred_init.hpp): every weight then comes
  // from the checkpoint, and the released parameters (one element expanded to the shape) cannot be
  // written in place.
  const bool from_file = nn::deferring_init();
  auto& with_expert = *model_->vlm_with_expert;
  if (!from_file) {
    nn::init_llama_weights(*with_expert.vlm, vlm_config_.text.initializer_range);
    nn::init_llama_weights(*with_expert.lm_expert, vlm_config_.text.initializer_range);
  }
  std::vector<torch::nn::Linear> cross_kv;
  for (std::size_t i = 0; i < with_expert.lm_expert->layers->size(); ++i) {
    auto attn = with_expert.lm_expert->layer(i)->self_attn;
    if (attn->k_proj->weight.size(1) != with_expert.expert_hidden_size()) {
      if (!from_file) {
        attn->k_proj->reset_parameters();
        attn->v_proj->reset_parameters();
      }
      cross_kv.push_back(attn->k_proj);
      cross_kv.push_back(attn->v_proj);
    }
  }

  // dtypes as LeRobot builds them (reference smolvla.md §2): from_pretrained(bf16) when the VLM
  // weights are loaded, otherwise what the VLM's config.json asks for; the cross-attention k/v and
  // the heads stay fp32.
  const bool pretrained = config_.load_vlm_weights;
  auto& vlm_model = *with_expert.vlm->model;
  nn::convert_to(*vlm_model.vision_model, pretrained ? torch::kBFloat16 : vlm_config_.vision_model_dtype());
  nn::convert_to(*vlm_model.connector, pretrained ? torch::kBFloat16 : vlm_config_.top_dtype());
  nn::convert_to(*vlm_model.text_model, pretrained ? torch::kBFloat16 : vlm_config_.text_model_dtype());
  nn::convert_to(*with_expert.vlm->lm_head, pretrained ? torch::kBFloat16 : vlm_config_.top_dtype());
  nn::convert_to(*with_expert.lm_expert, pretrained ? torch::kBFloat16 : vlm_config_.text_model_dtype());
  for (auto& linear : cross_kv) nn::convert_to(*linear, torch::kFloat32);
  reset();
}

void SmolVLAPolicy::load_pretrained_parts() {
  if (!config_.load_vlm_weights) return;
  const auto file = vlm_dir_ / "model.safetensors";
  if (!fs::exists(file))
    throw util::ConfigError("policy 'smolvla': load_vlm_weights = true but " + file.string() + " does not exist",
                            fs::exists(vlm_dir_ / "model.safetensors.index.json")
                                ? "sharded VLM checkpoints are not supported; save the VLM as one model.safetensors"
                                : "download the VLM with `hf download " + config_.vlm_model_name +
                                      "`, or set load_vlm_weights=false to train the VLM from random weights");
  // The checkpoint holds all of the VLM's text layers; SmolVLA keeps the first num_vlm_layers.
  nn::WeightLoadOptions options;
  options.allow_unused_under_prefix = true;
  nn::load_module_weights(*model_->vlm_with_expert->vlm, file, options);
}

torch::Tensor SmolVLAPolicy::prepare_image(const torch::Tensor& image) const {
  if (auto size = config_.resize_height_width()) return nn::resize_with_pad_signed(image, size->first, size->second);
  return image * 2.0 - 1.0;
}

void SmolVLAPolicy::enable_vision_cache(const fs::path& dir, int64_t num_frames, const std::string& dataset_id,
                                        bool augmentation) {
  if (augmentation)
    throw util::ConfigError(
        "policy 'smolvla': cache_vision_features with image augmentation: the augmented frames "
        "differ every epoch, so their vision features cannot be reused",
        "turn image augmentation off or set policy.cache_vision_features=false");
  if (!config_.freeze_vision_encoder && !config_.train_expert_only)
    throw util::ConfigError("policy 'smolvla': cache_vision_features needs a frozen vision tower",
                            "set freeze_vision_encoder=true or policy.cache_vision_features=false");
  if (is_sharded())
    throw util::ConfigError(
        "policy 'smolvla': the vision feature cache on an FSDP-sharded policy: the cache fingerprints "
        "the vision tower's weights, and each rank holds only a shard of them",
        "call policy:prepare_training before acc:prepare");
  auto& vlm = *model_->vlm_with_expert->vlm->model;
  std::vector<torch::Tensor> weights;
  for (const auto& p : vlm.vision_model->parameters()) weights.push_back(p);
  for (const auto& p : vlm.connector->parameters()) weights.push_back(p);
  // LoRA adapters (or full_training_modules) in the tower train it: its features change every step.
  if (std::any_of(weights.begin(), weights.end(), [](const torch::Tensor& p) { return p.requires_grad(); }))
    throw util::ConfigError(
        "policy 'smolvla': cache_vision_features with trainable parameters in the vision tower or connector "
        "(policy.peft adapters or full_training_modules there): their features change as they train",
        "keep policy.peft's targets out of the vision tower, or set policy.cache_vision_features=false");
  VisionCacheLayout layout;
  layout.num_frames = num_frames;
  const auto& vision = vlm.vision_model->config();
  const auto size = config_.resize_height_width();
  const int64_t side_h = (size ? size->first : vision.image_size) / vision.patch_size;
  const int64_t side_w = (size ? size->second : vision.image_size) / vision.patch_size;
  const int64_t scale = vlm.connector->scale_factor();
  layout.tokens = (side_h / scale) * (side_w / scale);
  layout.hidden = vlm_config_.text.hidden_size;
  layout.dtype = vlm.connector->modality_projection->proj->weight.scalar_type();
  for (const auto& camera : config_.image_features())
    if (camera.key.find(".empty_camera_") == std::string::npos) layout.cameras.push_back(camera.key);
  layout.fingerprint =
      tensor_fingerprint(weights, dataset_id + "|" + nlohmann::json(config_.resize_imgs_with_padding).dump() + "|" +
                                      PolicyFeatures::list_to_json(config_.image_features()).dump());
  const auto max_bytes = static_cast<int64_t>(config_.vision_cache_max_gib * static_cast<double>(1LL << 30));
  vision_cache_ = std::make_shared<VisionFeatureCache>(dir, std::move(layout), max_bytes);
}

void SmolVLAPolicy::prepare_training(const TrainingContext& context) {
  if (!config_.cache_vision_features) return;
  if (context.num_frames <= 0 || context.dataset_id.empty())
    throw util::ConfigError("policy 'smolvla': cache_vision_features needs the training dataset's frame count and id",
                            "give prepare_training the dataset (or num_frames and dataset_id)");
  if (context.cache_dir.empty())
    throw util::ConfigError("policy 'smolvla': cache_vision_features needs a cache folder",
                            "give prepare_training a cache_dir (the run's <output_dir>/cache)");
  enable_vision_cache(context.cache_dir / "vision_features", context.num_frames, context.dataset_id,
                      context.augmentation);
}

std::map<std::string, double> SmolVLAPolicy::training_metrics() const {
  if (!vision_cache_) return {};
  return {{"vision_cache_hit_count", static_cast<double>(vision_cache_->hits())},
          {"vision_cache_miss_count", static_cast<double>(vision_cache_->misses())}};
}

PrefixInputs SmolVLAPolicy::prepare_inputs(const Batch& batch) {
  const auto cameras = config_.image_features();
  for (const auto& [key, tensor] : batch) {
    if (key.rfind(kCameraPrefix, 0) != 0 || ends_with(key, kPaddingMaskSuffix)) continue;
    bool known = std::any_of(cameras.begin(), cameras.end(), [&](const PolicyFeature& f) { return f.key == key; });
    if (!known) {
      std::string names;
      for (const auto& c : cameras) names += (names.empty() ? "'" : ", '") + c.key + "'";
      throw util::ConfigError(
          "smolvla policy: the batch has camera '" + key + "', which is not one of the policy's cameras (" + names +
              ")",
          "map dataset cameras onto the policy's with rename_map, e.g. " +
              suggested_rename_map(processors() ? processors()->rename_map() : RenameMap{}, key, cameras.front().key) +
              ", or drop it from the batch");
    }
  }
  // The vision feature cache serves training batches (which carry the frame index); inference
  // observations go through the tower.
  const bool use_cache = vision_cache_ && is_training();
  if (use_cache && !batch.count("index"))
    throw util::ConfigError("smolvla policy: the vision feature cache needs the frame 'index' of each sample",
                            "batches from lrhost's loader carry it; pass it with hand-made batches");
  PrefixInputs inputs;
  std::vector<std::string> missing;
  torch::Tensor last_image;
  for (const auto& camera : cameras) {
    auto found = batch.find(camera.key);
    if (found == batch.end()) {
      missing.push_back(camera.key);
      continue;
    }
    auto image = found->second.dim() == 5 ? found->second.select(1, -1) : found->second;
    if (image.dim() != 4 || !torch::isFloatingType(image.scalar_type()))
      throw util::DataError("smolvla policy: camera '" + camera.key + "' must be float (B, 3, H, W) in [0, 1], got " +
                            std::string(c10::toString(image.scalar_type())) + " " + c10::str(image.sizes()));
    auto mask_entry = batch.find(camera.key + kPaddingMaskSuffix);
    auto mask = mask_entry != batch.end()
                    ? mask_entry->second.to(torch::kBool)
                    : torch::ones({image.size(0)}, torch::TensorOptions(torch::kBool).device(image.device()));
    if (use_cache) {
      // Only frames not cached yet go through resize and the tower, whose output dtype is its
      // weights' or, under mixed precision, the autocast dtype.
      auto compute = [&](const torch::Tensor& rows) {
        torch::NoGradGuard no_grad;
        return model_->vlm_with_expert->embed_image(prepare_image(image.index_select(0, rows.to(image.device()))));
      };
      const auto device_type = image.device().type();
      const auto dtype =
          at::autocast::is_autocast_enabled(device_type)
              ? at::autocast::get_autocast_dtype(device_type)
              : model_->vlm_with_expert->vlm->model->connector->modality_projection->proj->weight.scalar_type();
      auto features = vision_cache_->lookup(camera.key, batch.at("index"), image.device(), dtype, compute);
      inputs.images.emplace_back();
      inputs.image_features.push_back(features);
      last_image = image;
    } else {
      inputs.images.push_back(prepare_image(image));
      inputs.image_features.emplace_back();
      last_image = inputs.images.back();
    }
    inputs.image_masks.push_back(mask);
  }
  if (inputs.image_masks.empty())
    throw util::ConfigError("smolvla policy: none of the policy's cameras is in the batch (expected '" +
                            cameras.front().key + "'" + (cameras.size() > 1 ? ", ..." : "") + ")");
  // Missing cameras become empty ones (all -1, masked out), at most empty_cameras of them.
  for (std::size_t i = 0; i < missing.size(); ++i) {
    if (static_cast<int64_t>(i) >= config_.empty_cameras)
      throw util::ConfigError("smolvla policy: camera '" + missing[i] + "' is missing from the batch",
                              "the policy has " + std::to_string(config_.empty_cameras) +
                                  " empty camera(s); give every camera or raise empty_cameras");
    // The prepared size: the resize box, or (without one) the camera's own size.
    auto shape = last_image.sizes().vec();
    if (auto size = config_.resize_height_width()) {
      shape[2] = size->first;
      shape[3] = size->second;
    }
    inputs.images.push_back(torch::full(shape, -1.0, last_image.options()));
    inputs.image_features.emplace_back();
    inputs.image_masks.push_back(torch::zeros_like(inputs.image_masks.back()));
  }

  auto state = require_input(batch, "observation.state", kType);
  if (state.dim() > 2) state = state.select(1, -1);
  inputs.state = pad_last_dim(state, config_.max_state_dim);
  auto tokens = batch.find(kLanguageTokens);
  auto mask = batch.find(kLanguageMask);
  if (tokens == batch.end() || mask == batch.end())
    throw util::ConfigError(
        std::string("smolvla policy: the batch has no '") + kLanguageTokens + "' / '" + kLanguageMask + "'",
        "preprocess the batch with the policy's processors (policy:preprocess(batch)): they "
        "tokenize the task of each frame");
  inputs.language_tokens = tokens->second;
  inputs.language_masks = mask->second.to(torch::kBool);
  return inputs;
}

torch::Tensor SmolVLAPolicy::pad_last_dim(const torch::Tensor& x, int64_t size) const {
  // LeRobot's pad_vector: zero-pad the last dimension, never truncate.
  if (x.size(-1) >= size) return x;
  return torch::constant_pad_nd(x, {0, size - x.size(-1)});
}

PolicyOutput SmolVLAPolicy::forward(const Batch& batch) {
  auto inputs = prepare_inputs(batch);
  auto actions = pad_last_dim(require_input(batch, "action", kType), config_.max_action_dim);
  auto noise_entry = batch.find("noise");
  auto noise = noise_entry != batch.end() ? noise_entry->second
                                          : VLAFlowMatchingImpl::sample_noise(actions.sizes(), actions.device());
  auto time_entry = batch.find("time");
  auto time = time_entry != batch.end() ? time_entry->second
                                        : VLAFlowMatchingImpl::sample_time(actions.size(0), actions.device());
  auto losses = model_->forward(inputs, actions, noise, time);
  const int64_t action_dim = config_.action_feature()->shape[0];
  losses = losses.slice(-1, 0, action_dim);
  PolicyOutput out;
  auto is_pad = batch.find("action_is_pad");
  // A mixture's padded action dimensions (no data behind them) are left out of the mean.
  auto real = data::real_dimension_weights(batch, "action", action_dim);
  if (real.defined()) {
    auto weights = real.to(losses.device()).expand_as(losses);
    if (is_pad != batch.end()) weights = weights * is_pad->second.to(torch::kBool).logical_not().unsqueeze(-1);
    out.loss = (losses * weights).sum() / weights.sum().clamp_min(1);
    out.parts[kPerSampleLoss] = per_sample_mean(losses, weights);
  } else if (is_pad == batch.end()) {
    out.loss = losses.mean();
    out.parts[kPerSampleLoss] = per_sample_mean(losses);
  } else {
    auto in_episode = is_pad->second.to(torch::kBool).logical_not();
    out.parts[kPerSampleLoss] = per_sample_mean(losses, in_episode.unsqueeze(-1));
    losses = losses * in_episode.unsqueeze(-1);
    auto num_valid = (in_episode.sum() * losses.size(-1)).clamp_min(1);
    out.loss = losses.sum() / num_valid;
  }
  return out;
}

torch::Tensor SmolVLAPolicy::predict_action_chunk(const Batch& batch) {
  torch::NoGradGuard no_grad;
  eval();
  auto inputs = prepare_inputs(batch);
  auto noise_entry = batch.find("noise");
  auto noise = noise_entry != batch.end()
                   ? noise_entry->second
                   : VLAFlowMatchingImpl::sample_noise(
                         {inputs.state.size(0), config_.chunk_size, config_.max_action_dim}, inputs.state.device());
  auto actions = model_->sample_actions(inputs, noise);
  return actions.slice(-1, 0, config_.action_feature()->shape[0]);
}

torch::Tensor SmolVLAPolicy::select_action(const Batch& batch) {
  torch::NoGradGuard no_grad;
  eval();
  return action_queue_.next(config_.n_action_steps, [&] { return predict_action_chunk(batch); });
}

nlohmann::ordered_json SmolVLAPolicy::optimizer_preset() const {
  return {{"type", "adamw"},
          {"lr", config_.optimizer_lr},
          {"weight_decay", config_.optimizer_weight_decay},
          {"betas", config_.optimizer_betas},
          {"eps", config_.optimizer_eps},
          {"grad_clip_norm", config_.optimizer_grad_clip_norm}};
}

nlohmann::ordered_json SmolVLAPolicy::scheduler_preset() const {
  // CosineDecayWithWarmupSchedulerConfig(peak_lr=optimizer_lr, decay_lr, warmup, decay); total_steps
  // comes from the recipe and shrinks warmup and decay when shorter (optim/scheduler.hpp).
  return {{"type", "cosine_decay_with_warmup"},
          {"warmup_steps", config_.scheduler_warmup_steps},
          {"decay_steps", config_.scheduler_decay_steps},
          {"decay_lr_ratio", config_.scheduler_decay_lr / config_.optimizer_lr}};
}

std::map<std::string, std::string> SmolVLAPolicy::normalization_mapping() const {
  return {config_.normalization_mapping.begin(), config_.normalization_mapping.end()};
}

std::map<std::string, std::vector<int64_t>> SmolVLAPolicy::delta_indices() const {
  // action_delta_indices = range(chunk_size); observation_delta_indices = [0] is the current frame,
  // which every observation already is.
  std::vector<int64_t> steps(static_cast<size_t>(config_.chunk_size));
  std::iota(steps.begin(), steps.end(), 0);
  return {{config_.action_feature()->key, steps}};
}

std::optional<LanguageSettings> SmolVLAPolicy::language_settings() const {
  return LanguageSettings{config_.vlm_model_name, vlm_dir_, config_.tokenizer_max_length, config_.pad_language_to};
}

std::shared_ptr<Policy> make_smolvla_policy(const nlohmann::json& config, const PolicyFeatures& features) {
  auto parsed = SmolVLAConfig::from_json(config, features);
  auto vlm_dir = io::resolve_model_dir(parsed.vlm_model_name, "policy.vlm_model_name");
  return std::make_shared<SmolVLAPolicy>(std::move(parsed), std::move(vlm_dir));
}

std::string SmolVLAPolicy::fsdp_gather_group(const std::string& unit_path) const {
  const std::string expert = ".lm_expert.layers.";
  const auto at = unit_path.find(expert);
  if (at == std::string::npos) return unit_path;
  const int64_t layer = std::stoll(unit_path.substr(at + expert.size()));
  return unit_path.substr(0, at) + ".vlm.model.text_model.layers." +
         std::to_string(layer * model_->vlm_with_expert->expert_stride());
}

std::optional<double> SmolVLAPolicy::training_flops_per_sample() const {
  return smolvla_training_flops_per_sample(*model_.ptr(), config_, vlm_config_,
                                           static_cast<int64_t>(config_.image_features().size()));
}

}  // namespace lrhost::policy::smolvla
