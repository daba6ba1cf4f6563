// LeRobot's DiffusionModel (the policy's `diffusion` module): the camera encoders (`rgb_encoder`,
// a ModuleList of one encoder per camera or a single shared one), the conditional U-Net (`unet`)
// and the noise scheduler (not a module: nothing of it is in the weights). It builds the global
// conditioning from an observation window, computes the denoising loss, and samples action
// trajectories. Random draws happen in LeRobot's order and shapes (crop offsets per encoder, then
// the noise, then the timesteps; the prior, then one DDPM noise per step), so a seeded run draws
// what Python draws; the overloads taking noise/timesteps make the results reproducible outright.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "host/policy/diffusion/diffusion_config.hpp"
#include "host/policy/diffusion/noise_scheduler.hpp"
#include "host/policy/diffusion/rgb_encoder.hpp"
#include "host/policy/diffusion/unet1d.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy::diffusion {

// The batch keys the model reads (LeRobot's OBS_IMAGES and OBS_STATE).
inline constexpr const char* kImages = "observation.images";
inline constexpr const char* kState = "observation.state";

class DiffusionModelImpl : public torch::nn::Module {
 public:
  explicit DiffusionModelImpl(const DiffusionConfig& config);

  // (B, global_cond_dim): per observation step [state, camera features (camera order), env state],
  // flattened over the n_obs_steps window. Expects "observation.state" (B, S, Ds), the stacked
  // "observation.images" (B, S, N, C, H, W) when there are cameras, and
  // "observation.environment_state" (B, S, De) when configured.
  torch::Tensor prepare_global_conditioning(const Batch& batch);

  // Denoises from `noise` (or a torch::randn prior (B, horizon, A)) through the inference timesteps.
  torch::Tensor conditional_sample(int64_t batch_size, const torch::Tensor& global_cond,
                                   const torch::Tensor& noise = {});
  // The n_action_steps actions from the current observation: (B, n_action_steps, A).
  torch::Tensor generate_actions(const Batch& batch, const torch::Tensor& noise = {});

  // Mean squared error of the U-Net's prediction (noise or clean actions) on noised actions.
  // Needs "action" (B, horizon, A) and "action_is_pad" (B, horizon) besides the observations.
  // `per_sample` (when given) receives each sample's loss ([B], detached: per_sample_loss.hpp).
  torch::Tensor compute_loss(const Batch& batch, torch::Tensor* per_sample = nullptr);
  // The same with the noise (B, horizon, A) and timesteps (B,) given instead of drawn.
  torch::Tensor compute_loss(const Batch& batch, const torch::Tensor& noise, const torch::Tensor& timesteps);

  int64_t global_cond_dim() const { return global_cond_dim_; }
  NoiseScheduler& noise_scheduler() { return scheduler_; }
  DiffusionConditionalUnet1d& unet() { return unet_; }
  const std::vector<DiffusionRgbEncoder>& rgb_encoders() const { return encoders_; }

 private:
  // Checks the inputs and returns (global_cond, actions).
  std::pair<torch::Tensor, torch::Tensor> loss_inputs(const Batch& batch);
  torch::Tensor loss_from(const Batch& batch, const torch::Tensor& global_cond, const torch::Tensor& actions,
                          const torch::Tensor& noise, const torch::Tensor& timesteps,
                          torch::Tensor* per_sample = nullptr);

  DiffusionConfig config_;
  int64_t action_dim_ = 0;
  int64_t global_cond_dim_ = 0;                // for the whole window
  std::vector<DiffusionRgbEncoder> encoders_;  // one per camera, or one shared
  DiffusionConditionalUnet1d unet_{nullptr};
  NoiseScheduler scheduler_;
};
TORCH_MODULE(DiffusionModel);

}  // namespace lrhost::policy::diffusion
