// The noise schedulers of the Diffusion policy, with the semantics of Hugging Face diffusers'
// DDPMScheduler and DDIMScheduler as LeRobot configures them (variance "fixed_small",
// timestep_spacing "leading", steps_offset 0, DDIM set_alpha_to_one and eta 0, no thresholding;
// the same code in diffusers 0.35.2, pinned by LeRobot 0.4.4, and 0.38.0, pinned by HEAD). The arithmetic repeats
// diffusers' float32 tensor operations in the same order, so schedules and denoising steps agree with Python bit for
// bit, and DDPM draws its step noise with torch::randn exactly where diffusers does (every step but the last), so a
// seeded Python run and an lrhost run draw the same numbers.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

namespace lrhost::policy::diffusion {

struct NoiseSchedulerOptions {
  std::string type = "DDPM";  // "DDPM" | "DDIM"
  int64_t num_train_timesteps = 100;
  double beta_start = 0.0001;
  double beta_end = 0.02;
  std::string beta_schedule = "squaredcos_cap_v2";  // linear | scaled_linear | squaredcos_cap_v2 | sigmoid (DDPM)
  bool clip_sample = true;
  double clip_sample_range = 1.0;
  std::string prediction_type = "epsilon";  // "epsilon" | "sample"
};

class NoiseScheduler {
 public:
  explicit NoiseScheduler(NoiseSchedulerOptions options);

  // float32 (num_train_timesteps): the per-step betas and the cumulative product of 1 - beta.
  const torch::Tensor& betas() const { return betas_; }
  const torch::Tensor& alphas_cumprod() const { return alphas_cumprod_; }
  const NoiseSchedulerOptions& options() const { return options_; }

  // Forward diffusion: sqrt(acp[t]) * x0 + sqrt(1 - acp[t]) * noise, with one timestep per batch
  // row (timesteps: (B,) integer).
  torch::Tensor add_noise(const torch::Tensor& original, const torch::Tensor& noise,
                          const torch::Tensor& timesteps) const;

  // The descending inference timesteps: "leading" spacing, k * (T / n) for k = n-1 .. 0.
  void set_timesteps(int64_t num_inference_steps);
  const std::vector<int64_t>& timesteps() const { return timesteps_; }
  // The timestep a step from `t` lands on (-1 after the last); DDPM before set_timesteps: t - 1.
  int64_t previous_timestep(int64_t t) const;

  // One reverse step x_t -> x_{t-1}. The predicted x0 is clipped to +-clip_sample_range when
  // clip_sample is set. DDPM adds sqrt(variance) * N(0, I) for t > 0, drawn with torch::randn
  // (model_output's shape, dtype and device) unless `variance_noise` is given; DDIM (eta 0) is
  // deterministic and draws nothing.
  torch::Tensor step(const torch::Tensor& model_output, int64_t t, const torch::Tensor& sample,
                     const torch::Tensor& variance_noise = {}) const;

 private:
  torch::Tensor alpha_prod_at(int64_t t) const;
  torch::Tensor ddpm_step(const torch::Tensor& model_output, int64_t t, const torch::Tensor& sample,
                          const torch::Tensor& variance_noise) const;
  torch::Tensor ddim_step(const torch::Tensor& model_output, int64_t t, const torch::Tensor& sample) const;

  NoiseSchedulerOptions options_;
  torch::Tensor betas_, alphas_cumprod_;
  // alphas_cumprod_ on the training device in the actions' dtype, copied once: a copy per step
  // would wait for the host each step and cannot be captured in a CUDA graph.
  mutable torch::Tensor alphas_cumprod_on_device_;
  std::vector<int64_t> timesteps_;
  int64_t num_inference_steps_ = 0;  // 0: set_timesteps not called yet
};

}  // namespace lrhost::policy::diffusion
