// ACTPolicy: loss, inference queues and the training presets LeRobot attaches to ACT.
#include "host/policy/act/act_policy.hpp"

#include <numeric>

#include "host/policy/act/act_flops.hpp"
#include "host/policy/per_sample_loss.hpp"

namespace lrhost::policy::act {

ACTPolicy::ACTPolicy(ACTConfig config) : config_(std::move(config)) {
  config_.validate();
  model_ = register_module("model", ACT(config_));
  if (config_.temporal_ensemble_coeff)
    temporal_ensembler_.emplace(*config_.temporal_ensemble_coeff, config_.chunk_size);
  reset();
}

std::vector<torch::Tensor> ACTPolicy::camera_images(const Batch& batch) const {
  std::vector<torch::Tensor> images;
  for (const auto& camera : config_.image_features()) images.push_back(require_input(batch, camera.key, "act"));
  return images;
}

PolicyOutput ACTPolicy::forward(const Batch& batch) {
  auto out = model_->forward(batch, camera_images(batch));
  const auto& actions = require_input(batch, "action", "act");
  const auto& action_is_pad = require_input(batch, "action_is_pad", "act");
  // L1 over the real (non-padded) action steps: the mean over valid elements.
  auto abs_err = torch::l1_loss(out.actions, actions, at::Reduction::None);
  auto valid = action_is_pad.to(torch::kBool).logical_not().unsqueeze(-1);
  auto num_valid = valid.sum() * abs_err.size(-1);
  auto l1_loss = (abs_err * valid).sum() / num_valid.clamp_min(1);

  PolicyOutput result;
  result.parts["l1_loss"] = l1_loss.detach();
  auto per_sample = per_sample_mean(abs_err, valid);
  if (config_.use_vae && out.log_sigma_x2.defined()) {
    // KL(N(mu, sigma^2) || N(0, 1)) summed over the latent dimensions, averaged over the batch.
    auto kld_of_sample = (-0.5 * (1 + out.log_sigma_x2 - out.mu.pow(2) - out.log_sigma_x2.exp())).sum(-1);
    auto kld = kld_of_sample.mean();
    result.parts["kld_loss"] = kld.detach();
    result.loss = l1_loss + kld * config_.kl_weight;
    per_sample = per_sample + kld_of_sample.detach() * config_.kl_weight;
  } else {
    result.loss = l1_loss;
  }
  result.parts[kPerSampleLoss] = per_sample;
  return result;
}

torch::Tensor ACTPolicy::predict_action_chunk(const Batch& batch) {
  torch::NoGradGuard no_grad;
  eval();
  return model_->forward(batch, camera_images(batch)).actions;
}

torch::Tensor ACTPolicy::select_action(const Batch& batch) {
  torch::NoGradGuard no_grad;
  eval();  // the policy may have been put back in train mode while the queue was consumed
  if (temporal_ensembler_) return temporal_ensembler_->update(predict_action_chunk(batch));
  if (action_queue_.empty()) {
    auto actions = predict_action_chunk(batch).slice(1, 0, config_.n_action_steps);
    // The queue holds (B, A) steps in time order.
    for (int64_t t = 0; t < actions.size(1); ++t) action_queue_.push_back(actions.select(1, t));
  }
  auto action = action_queue_.front();
  action_queue_.pop_front();
  return action;
}

void ACTPolicy::reset() {
  if (temporal_ensembler_) temporal_ensembler_->reset();
  action_queue_.clear();
}

std::vector<ParamGroup> ACTPolicy::param_groups() const {
  // LeRobot's get_optim_params: everything but the backbone, then the backbone with its own lr.
  ParamGroup main{"default", {}, std::nullopt, std::nullopt};
  ParamGroup backbone{"backbone", {}, config_.optimizer_lr_backbone, std::nullopt};
  for (const auto& item : named_parameters()) {
    if (!item.value().requires_grad()) continue;
    (item.key().rfind("model.backbone", 0) == 0 ? backbone : main).params.push_back(item.value());
  }
  // Without cameras LeRobot keeps an empty second group; lrhost's optimizer rejects empty groups.
  if (backbone.params.empty()) return {main};
  return {main, backbone};
}

nlohmann::ordered_json ACTPolicy::optimizer_preset() const {
  // AdamWConfig(lr=optimizer_lr, weight_decay=optimizer_weight_decay) with AdamWConfig's defaults.
  return {{"type", "adamw"},
          {"lr", config_.optimizer_lr},
          {"weight_decay", config_.optimizer_weight_decay},
          {"betas", {0.9, 0.999}},
          {"eps", 1e-8},
          {"grad_clip_norm", 10.0}};
}

std::map<std::string, std::string> ACTPolicy::normalization_mapping() const {
  return {config_.normalization_mapping.begin(), config_.normalization_mapping.end()};
}

std::map<std::string, std::vector<int64_t>> ACTPolicy::delta_indices() const {
  // observation_delta_indices is None; action_delta_indices = range(chunk_size).
  std::vector<int64_t> steps(static_cast<size_t>(config_.chunk_size));
  std::iota(steps.begin(), steps.end(), 0);
  return {{config_.action_feature()->key, steps}};
}

std::shared_ptr<Policy> make_act_policy(const nlohmann::json& config, const PolicyFeatures& features) {
  return std::make_shared<ACTPolicy>(ACTConfig::from_json(config, features));
}

std::optional<double> ACTPolicy::training_flops_per_sample() const {
  return act_training_flops_per_sample(config_);
}

}  // namespace lrhost::policy::act
