// DiffusionPolicy: batch preparation, LeRobot's inference queues, and the training presets.
#include "host/policy/diffusion/diffusion_policy.hpp"

#include "host/policy/diffusion/diffusion_flops.hpp"
#include "host/policy/per_sample_loss.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::diffusion {
DiffusionPolicy::DiffusionPolicy(DiffusionConfig config) : config_(std::move(config)) {
  config_.validate();
  diffusion_ = register_module("diffusion", DiffusionModel(config_));
  reset();
}

Batch DiffusionPolicy::with_windows(const Batch& batch) const {
  Batch prepared = batch;
  if (config_.n_obs_steps == 1) {
    for (const auto& camera : config_.image_features()) {
      auto found = prepared.find(camera.key);
      if (found != prepared.end() && found->second.dim() == 4) found->second = found->second.unsqueeze(1);
    }
    for (const auto* vector_feature : {config_.robot_state_feature(), config_.env_state_feature()}) {
      if (!vector_feature) continue;
      auto found = prepared.find(vector_feature->key);
      if (found != prepared.end() && found->second.dim() == 2) found->second = found->second.unsqueeze(1);
    }
  }
  auto cameras = config_.image_features();
  if (!cameras.empty()) {
    std::vector<torch::Tensor> images;
    for (const auto& camera : cameras) images.push_back(require_input(prepared, camera.key, "diffusion"));
    prepared[kImages] = torch::stack(images, -4);
  }
  return prepared;
}

std::optional<std::string> DiffusionPolicy::cuda_graph_blocker() const {
  // LeRobot draws the crop offsets with torch.randint on the CPU and reads them back; a graph would
  // replay the first step's crop forever.
  if (config_.crop_shape && config_.crop_is_random && !config_.image_features().empty())
    return "Diffusion's random crop draws its offsets on the host each step (policy.crop_is_random=false "
           "captures, with a center crop)";
  return std::nullopt;
}

PolicyOutput DiffusionPolicy::forward(const Batch& batch) {
  PolicyOutput out;
  torch::Tensor per_sample;
  out.loss = diffusion_->compute_loss(with_windows(batch), &per_sample);
  out.parts[kPerSampleLoss] = per_sample;
  return out;
}

torch::Tensor DiffusionPolicy::compute_loss(const Batch& batch, const torch::Tensor& noise,
                                            const torch::Tensor& timesteps) {
  return diffusion_->compute_loss(with_windows(batch), noise, timesteps);
}

void DiffusionPolicy::reset() {
  observation_queues_.clear();
  observation_queues_[kState];
  if (!config_.image_features().empty()) observation_queues_[kImages];
  if (const auto* env = config_.env_state_feature()) observation_queues_[env->key];
  action_queue_.clear();
}

size_t DiffusionPolicy::observation_queue_size(const std::string& key) const {
  auto found = observation_queues_.find(key);
  return found == observation_queues_.end() ? 0 : found->second.size();
}

torch::Tensor DiffusionPolicy::predict_action_chunk(const Batch& batch, const torch::Tensor& noise) {
  torch::NoGradGuard no_grad;
  bool queued = !action_queue_.empty();
  for (const auto& [key, queue] : observation_queues_) queued = queued || !queue.empty();
  Batch prepared;
  if (queued) {
    // Online: the observation windows come from the queues (oldest first).
    for (const auto& [key, queue] : observation_queues_)
      if (!queue.empty()) prepared[key] = torch::stack(std::vector<torch::Tensor>(queue.begin(), queue.end()), 1);
  } else {
    // Offline (e.g. a data loader batch): the batch holds the windows itself.
    prepared = with_windows(batch);
  }
  return diffusion_->generate_actions(prepared, noise);
}

torch::Tensor DiffusionPolicy::select_action(const Batch& batch, const torch::Tensor& noise) {
  torch::NoGradGuard no_grad;
  Batch frame = batch;
  frame.erase("action");  // offline evaluation batches carry the ground truth
  auto cameras = config_.image_features();
  if (!cameras.empty()) {
    std::vector<torch::Tensor> images;
    for (const auto& camera : cameras) images.push_back(require_input(frame, camera.key, "diffusion"));
    frame[kImages] = torch::stack(images, -4);  // (B, N, C, H, W)
  }
  // LeRobot's populate_queues: the first frame fills the whole window, later ones push the oldest out.
  const auto window = static_cast<size_t>(config_.n_obs_steps);
  for (auto& [key, queue] : observation_queues_) {
    auto found = frame.find(key);
    if (found == frame.end()) continue;
    if (queue.size() != window) {
      while (queue.size() != window) queue.push_back(found->second);
    } else {
      queue.push_back(found->second);
      queue.pop_front();
    }
  }
  if (action_queue_.empty()) {
    auto actions = predict_action_chunk(frame, noise);  // (B, n_action_steps, A)
    for (int64_t t = 0; t < actions.size(1); ++t) action_queue_.push_back(actions.select(1, t));
  }
  auto action = action_queue_.front();
  action_queue_.pop_front();
  return action;
}

nlohmann::ordered_json DiffusionPolicy::optimizer_preset() const {
  // AdamConfig(lr, betas, eps, weight_decay) with AdamConfig's grad_clip_norm.
  return {{"type", "adam"},
          {"lr", config_.optimizer_lr},
          {"weight_decay", config_.optimizer_weight_decay},
          {"betas", config_.optimizer_betas},
          {"eps", config_.optimizer_eps},
          {"grad_clip_norm", 10.0}};
}

nlohmann::ordered_json DiffusionPolicy::scheduler_preset() const {
  // DiffuserSchedulerConfig(name, num_warmup_steps): diffusers' get_scheduler names mapped onto
  // lrhost's schedules (the same formulas; total steps come from the recipe).
  const auto& name = config_.scheduler_name;
  std::string kind;
  int64_t warmup = config_.scheduler_warmup_steps;
  if (name == "cosine") {
    kind = "cosine_with_warmup";
  } else if (name == "linear") {
    kind = "linear_with_warmup";
  } else if (name == "constant_with_warmup") {
    kind = "constant_with_warmup";
  } else if (name == "constant") {
    kind = "constant";
    warmup = 0;  // diffusers' constant schedule has no warmup
  } else {
    throw util::NotImplemented("policy 'diffusion': scheduler_name '" + name + "' is not implemented",
                               "lrhost has 'cosine', 'linear', 'constant' and 'constant_with_warmup'");
  }
  return {{"type", kind}, {"warmup_steps", warmup}};
}

std::map<std::string, std::string> DiffusionPolicy::normalization_mapping() const {
  return {config_.normalization_mapping.begin(), config_.normalization_mapping.end()};
}

std::map<std::string, std::vector<int64_t>> DiffusionPolicy::delta_indices() const {
  // observation_delta_indices = range(1 - n_obs, 1) for every input; action_delta_indices =
  // range(1 - n_obs, 1 - n_obs + horizon).
  std::vector<int64_t> observation, action;
  for (int64_t i = 1 - config_.n_obs_steps; i < 1; ++i) observation.push_back(i);
  for (int64_t i = 1 - config_.n_obs_steps; i < 1 - config_.n_obs_steps + config_.horizon; ++i) action.push_back(i);
  std::map<std::string, std::vector<int64_t>> result;
  for (const auto& feature : config_.input_features) result[feature.key] = observation;
  result[config_.action_feature()->key] = action;
  return result;
}

std::optional<double> DiffusionPolicy::training_flops_per_sample() const {
  return diffusion_training_flops_per_sample(config_, *diffusion_);
}

std::shared_ptr<Policy> make_diffusion_policy(const nlohmann::json& config, const PolicyFeatures& features) {
  return std::make_shared<DiffusionPolicy>(DiffusionConfig::from_json(config, features));
}

}  // namespace lrhost::policy::diffusion
