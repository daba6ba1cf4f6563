// DiffusionModel: observation encoding, the denoising loss and reverse-diffusion sampling.
#include "host/policy/diffusion/diffusion_model.hpp"

#include "host/policy/per_sample_loss.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::diffusion {
namespace {

NoiseSchedulerOptions scheduler_options(const DiffusionConfig& c) {
  NoiseSchedulerOptions o;
  o.type = c.noise_scheduler_type;
  o.num_train_timesteps = c.num_train_timesteps;
  o.beta_start = c.beta_start;
  o.beta_end = c.beta_end;
  o.beta_schedule = c.beta_schedule;
  o.clip_sample = c.clip_sample;
  o.clip_sample_range = c.clip_sample_range;
  o.prediction_type = c.prediction_type;
  return o;
}

std::string shape_text(const torch::Tensor& t) {
  return c10::str(t.sizes());
}

}  // namespace

DiffusionModelImpl::DiffusionModelImpl(const DiffusionConfig& config)
    : config_(config), scheduler_(scheduler_options(config)) {
  action_dim_ = config_.action_feature()->shape[0];
  int64_t per_step = config_.robot_state_feature()->shape[0];
  auto cameras = config_.image_features();
  if (!cameras.empty()) {
    const auto& image_shape = cameras.front().shape;
    if (config_.use_separate_rgb_encoder_per_camera) {
      auto list = torch::nn::ModuleList();
      for (size_t i = 0; i < cameras.size(); ++i) {
        encoders_.push_back(DiffusionRgbEncoder(config_, image_shape));
        list->push_back(encoders_.back());
      }
      register_module("rgb_encoder", list);
    } else {
      encoders_.push_back(register_module("rgb_encoder", DiffusionRgbEncoder(config_, image_shape)));
    }
    per_step += encoders_.front()->feature_dim() * static_cast<int64_t>(cameras.size());
  }
  if (const auto* env = config_.env_state_feature()) per_step += env->shape[0];
  global_cond_dim_ = per_step * config_.n_obs_steps;
  unet_ = register_module("unet", DiffusionConditionalUnet1d(config_, action_dim_, global_cond_dim_));
}

torch::Tensor DiffusionModelImpl::prepare_global_conditioning(const Batch& batch) {
  const auto& state = require_input(batch, kState, "diffusion");
  if (state.dim() != 3)
    throw util::DataError("policy 'diffusion': 'observation.state' must be (batch, n_obs_steps, state_dim), got " +
                          shape_text(state));
  const int64_t batch_size = state.size(0), n_obs = state.size(1);
  std::vector<torch::Tensor> features{state};
  if (!encoders_.empty()) {
    const auto& images = require_input(batch, kImages, "diffusion");
    const int64_t cameras = static_cast<int64_t>(config_.image_features().size());
    if (images.dim() != 6 || images.size(0) != batch_size || images.size(1) != n_obs || images.size(2) != cameras)
      throw util::DataError("policy 'diffusion': 'observation.images' must be (batch " + std::to_string(batch_size) +
                            ", n_obs_steps " + std::to_string(n_obs) + ", cameras " + std::to_string(cameras) +
                            ", C, H, W), got " + shape_text(images));
    torch::Tensor image_features;
    if (config_.use_separate_rgb_encoder_per_camera) {
      // Camera first, (batch, step) merged: each camera through its own encoder, in camera order.
      auto per_camera = images.permute({2, 0, 1, 3, 4, 5})
                            .reshape({cameras, batch_size * n_obs, images.size(3), images.size(4), images.size(5)});
      std::vector<torch::Tensor> encoded;
      for (int64_t i = 0; i < cameras; ++i)
        encoded.push_back(encoders_[static_cast<size_t>(i)]->forward(per_camera[i]));
      auto stacked = torch::cat(encoded);  // (N*B*S, D), camera-major
      image_features =
          stacked.view({cameras, batch_size, n_obs, -1}).permute({1, 2, 0, 3}).reshape({batch_size, n_obs, -1});
    } else {
      auto flat = images.reshape({batch_size * n_obs * cameras, images.size(3), images.size(4), images.size(5)});
      image_features = encoders_.front()->forward(flat).reshape({batch_size, n_obs, -1});
    }
    features.push_back(image_features);
  }
  if (const auto* env = config_.env_state_feature()) features.push_back(require_input(batch, env->key, "diffusion"));
  return torch::cat(features, -1).flatten(1);
}

torch::Tensor DiffusionModelImpl::conditional_sample(int64_t batch_size, const torch::Tensor& global_cond,
                                                     const torch::Tensor& noise) {
  const auto reference = unet_->parameters().front();  // parameters() returns a temporary
  auto sample = noise.defined()
                    ? noise
                    : torch::randn({batch_size, config_.horizon, action_dim_},
                                   torch::TensorOptions().dtype(reference.scalar_type()).device(reference.device()));
  if (sample.size(0) != batch_size || sample.size(1) != config_.horizon || sample.size(2) != action_dim_)
    throw util::DataError("policy 'diffusion': initial noise must be (" + std::to_string(batch_size) + ", " +
                          std::to_string(config_.horizon) + ", " + std::to_string(action_dim_) + "), got " +
                          shape_text(sample));
  scheduler_.set_timesteps(config_.inference_steps());
  for (int64_t t : scheduler_.timesteps()) {
    auto timestep =
        torch::full({sample.size(0)}, t, torch::TensorOptions().dtype(torch::kLong).device(sample.device()));
    auto model_output = unet_->forward(sample, timestep, global_cond);
    sample = scheduler_.step(model_output, t, sample);
  }
  return sample;
}

torch::Tensor DiffusionModelImpl::generate_actions(const Batch& batch, const torch::Tensor& noise) {
  const auto& state = require_input(batch, kState, "diffusion");
  if (state.dim() != 3 || state.size(1) != config_.n_obs_steps)
    throw util::DataError("policy 'diffusion': 'observation.state' must be (batch, n_obs_steps = " +
                          std::to_string(config_.n_obs_steps) + ", state_dim), got " + shape_text(state));
  auto global_cond = prepare_global_conditioning(batch);
  auto actions = conditional_sample(state.size(0), global_cond, noise);
  // The executed actions start at the current (last) observation step.
  const int64_t start = config_.n_obs_steps - 1;
  return actions.slice(1, start, start + config_.n_action_steps);
}

std::pair<torch::Tensor, torch::Tensor> DiffusionModelImpl::loss_inputs(const Batch& batch) {
  const auto& state = require_input(batch, kState, "diffusion");
  const auto& actions = require_input(batch, "action", "diffusion");
  require_input(batch, "action_is_pad", "diffusion");
  if (state.dim() != 3 || state.size(1) != config_.n_obs_steps)
    throw util::DataError("policy 'diffusion': 'observation.state' must be (batch, n_obs_steps = " +
                          std::to_string(config_.n_obs_steps) + ", state_dim), got " + shape_text(state));
  if (actions.dim() != 3 || actions.size(1) != config_.horizon || actions.size(2) != action_dim_)
    throw util::DataError("policy 'diffusion': 'action' must be (batch, horizon = " + std::to_string(config_.horizon) +
                          ", " + std::to_string(action_dim_) + "), got " + shape_text(actions));
  return {prepare_global_conditioning(batch), actions};
}

torch::Tensor DiffusionModelImpl::compute_loss(const Batch& batch, torch::Tensor* per_sample) {
  auto [global_cond, actions] = loss_inputs(batch);
  // LeRobot's draws: the noise (float32, the actions' shape), then one timestep per sample.
  auto noise = torch::randn(actions.sizes(), torch::TensorOptions().device(actions.device()));
  auto timesteps = torch::randint(0, config_.num_train_timesteps, {actions.size(0)},
                                  torch::TensorOptions().dtype(torch::kLong).device(actions.device()));
  return loss_from(batch, global_cond, actions, noise, timesteps, per_sample);
}

torch::Tensor DiffusionModelImpl::compute_loss(const Batch& batch, const torch::Tensor& noise,
                                               const torch::Tensor& timesteps) {
  auto [global_cond, actions] = loss_inputs(batch);
  if (noise.sizes() != actions.sizes())
    throw util::DataError("policy 'diffusion': noise must have the actions' shape " + shape_text(actions) + ", got " +
                          shape_text(noise));
  if (timesteps.dim() != 1 || timesteps.size(0) != actions.size(0))
    throw util::DataError("policy 'diffusion': timesteps must be (batch,), got " + shape_text(timesteps));
  return loss_from(batch, global_cond, actions, noise, timesteps.to(torch::kLong));
}

torch::Tensor DiffusionModelImpl::loss_from(const Batch& batch, const torch::Tensor& global_cond,
                                            const torch::Tensor& actions, const torch::Tensor& noise,
                                            const torch::Tensor& timesteps, torch::Tensor* per_sample) {
  auto noisy = scheduler_.add_noise(actions, noise, timesteps);
  auto pred = unet_->forward(noisy, timesteps, global_cond);
  const auto& target = config_.prediction_type == "epsilon" ? noise : actions;
  auto loss = torch::mse_loss(pred, target, at::Reduction::None);
  if (config_.do_mask_loss_for_padding) {
    // Mean over the real (non-padded) action steps only.
    auto mask = batch.at("action_is_pad").to(torch::kBool).logical_not().unsqueeze(-1);
    if (per_sample) *per_sample = per_sample_mean(loss, mask);
    auto num_valid = mask.sum() * loss.size(-1);
    return (loss * mask).sum() / num_valid.clamp_min(1);
  }
  if (per_sample) *per_sample = per_sample_mean(loss);
  return loss.mean();
}

}  // namespace lrhost::policy::diffusion
