// DDPM / DDIM noise schedules and denoising steps in diffusers' float32 arithmetic.
#include "host/policy/diffusion/noise_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "host/util/error.hpp"

namespace lrhost::policy::diffusion {
namespace {

// GLIDE's cosine schedule ("squaredcos_cap_v2"): beta_i = min(1 - abar((i+1)/T) / abar(i/T), 0.999)
// with abar(t) = cos((t + 0.008) / 1.008 * pi / 2)^2, evaluated in double as diffusers does in
// Python floats, then stored as float32.
torch::Tensor cosine_betas(int64_t steps) {
  auto alpha_bar = [](double t) { return std::pow(std::cos((t + 0.008) / 1.008 * std::numbers::pi / 2), 2.0); };
  std::vector<double> betas;
  for (int64_t i = 0; i < steps; ++i) {
    double t1 = static_cast<double>(i) / static_cast<double>(steps);
    double t2 = static_cast<double>(i + 1) / static_cast<double>(steps);
    betas.push_back(std::min(1 - alpha_bar(t2) / alpha_bar(t1), 0.999));
  }
  return torch::tensor(betas, torch::kFloat64).to(torch::kFloat32);
}

// `1 - x` as Python's `1 - tensor` computes it.
torch::Tensor one_minus(const torch::Tensor& x) {
  return torch::rsub(x, 1);
}

}  // namespace

NoiseScheduler::NoiseScheduler(NoiseSchedulerOptions options) : options_(std::move(options)) {
  const int64_t steps = options_.num_train_timesteps;
  if (steps <= 0)
    throw util::ConfigError("noise scheduler: num_train_timesteps must be positive, got " + std::to_string(steps));
  if (options_.type != "DDPM" && options_.type != "DDIM")
    throw util::ConfigError("noise scheduler: unsupported type '" + options_.type + "' (expected 'DDPM' or 'DDIM')");
  if (options_.prediction_type != "epsilon" && options_.prediction_type != "sample")
    throw util::ConfigError("noise scheduler: prediction_type must be 'epsilon' or 'sample', got '" +
                            options_.prediction_type + "'");
  const auto& schedule = options_.beta_schedule;
  if (schedule == "linear") {
    betas_ = torch::linspace(options_.beta_start, options_.beta_end, steps, torch::kFloat32);
  } else if (schedule == "scaled_linear") {
    betas_ =
        torch::linspace(std::pow(options_.beta_start, 0.5), std::pow(options_.beta_end, 0.5), steps, torch::kFloat32)
            .pow(2);
  } else if (schedule == "squaredcos_cap_v2") {
    betas_ = cosine_betas(steps);
  } else if (schedule == "sigmoid" && options_.type == "DDPM") {
    betas_ =
        torch::sigmoid(torch::linspace(-6, 6, steps, torch::kFloat32)) * (options_.beta_end - options_.beta_start) +
        options_.beta_start;
  } else {
    throw util::ConfigError("noise scheduler: beta_schedule '" + schedule + "' is not implemented for " +
                            options_.type + " (linear, scaled_linear, squaredcos_cap_v2" +
                            (options_.type == "DDPM" ? ", sigmoid)" : ")"));
  }
  alphas_cumprod_ = torch::cumprod(one_minus(betas_), 0);
  // Before set_timesteps the chain runs over every training step, descending.
  for (int64_t t = steps - 1; t >= 0; --t) timesteps_.push_back(t);
}

torch::Tensor NoiseScheduler::add_noise(const torch::Tensor& original, const torch::Tensor& noise,
                                        const torch::Tensor& timesteps) const {
  auto& alphas_cumprod = alphas_cumprod_on_device_;
  if (!alphas_cumprod.defined() || alphas_cumprod.device() != original.device() ||
      alphas_cumprod.scalar_type() != original.scalar_type())
    alphas_cumprod = alphas_cumprod_.to(original.device(), original.scalar_type());
  auto picked = alphas_cumprod.index_select(0, timesteps.to(original.device()).to(torch::kLong).flatten());
  auto sqrt_alpha_prod = picked.pow(0.5);
  auto sqrt_one_minus_alpha_prod = one_minus(picked).pow(0.5);
  while (sqrt_alpha_prod.dim() < original.dim()) {
    sqrt_alpha_prod = sqrt_alpha_prod.unsqueeze(-1);
    sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.unsqueeze(-1);
  }
  return sqrt_alpha_prod * original + sqrt_one_minus_alpha_prod * noise;
}

void NoiseScheduler::set_timesteps(int64_t num_inference_steps) {
  const int64_t steps = options_.num_train_timesteps;
  if (num_inference_steps <= 0 || num_inference_steps > steps)
    throw util::ConfigError("noise scheduler: num_inference_steps must be in [1, " + std::to_string(steps) +
                            "] (num_train_timesteps), got " + std::to_string(num_inference_steps));
  num_inference_steps_ = num_inference_steps;
  const int64_t ratio = steps / num_inference_steps;
  timesteps_.clear();
  for (int64_t k = num_inference_steps - 1; k >= 0; --k) timesteps_.push_back(k * ratio);
}

int64_t NoiseScheduler::previous_timestep(int64_t t) const {
  if (options_.type == "DDIM") {
    const int64_t n = num_inference_steps_ > 0 ? num_inference_steps_ : options_.num_train_timesteps;
    return t - options_.num_train_timesteps / n;
  }
  if (num_inference_steps_ == 0) return t - 1;
  auto found = std::find(timesteps_.begin(), timesteps_.end(), t);
  if (found == timesteps_.end())
    throw util::Error("noise scheduler: timestep " + std::to_string(t) + " is not in the inference schedule");
  return std::next(found) == timesteps_.end() ? -1 : *std::next(found);
}

torch::Tensor NoiseScheduler::alpha_prod_at(int64_t t) const {
  // DDPM's `one` and DDIM's final_alpha_cumprod (set_alpha_to_one) are both 1 before step 0.
  return t >= 0 ? alphas_cumprod_[t] : torch::tensor(1.0f);
}

torch::Tensor NoiseScheduler::step(const torch::Tensor& model_output, int64_t t, const torch::Tensor& sample,
                                   const torch::Tensor& variance_noise) const {
  if (t < 0 || t >= options_.num_train_timesteps)
    throw util::Error("noise scheduler: timestep " + std::to_string(t) + " outside [0, " +
                      std::to_string(options_.num_train_timesteps) + ")");
  return options_.type == "DDPM" ? ddpm_step(model_output, t, sample, variance_noise)
                                 : ddim_step(model_output, t, sample);
}

torch::Tensor NoiseScheduler::ddpm_step(const torch::Tensor& model_output, int64_t t, const torch::Tensor& sample,
                                        const torch::Tensor& variance_noise) const {
  const int64_t prev_t = previous_timestep(t);
  auto alpha_prod_t = alpha_prod_at(t);
  auto alpha_prod_t_prev = alpha_prod_at(prev_t);
  auto beta_prod_t = one_minus(alpha_prod_t);
  auto beta_prod_t_prev = one_minus(alpha_prod_t_prev);
  auto current_alpha_t = alpha_prod_t / alpha_prod_t_prev;
  auto current_beta_t = one_minus(current_alpha_t);

  // Predicted x0 (DDPM paper eq. 15), clipped.
  torch::Tensor pred_original = options_.prediction_type == "epsilon"
                                    ? (sample - beta_prod_t.pow(0.5) * model_output) / alpha_prod_t.pow(0.5)
                                    : model_output;
  if (options_.clip_sample)
    pred_original = pred_original.clamp(-options_.clip_sample_range, options_.clip_sample_range);

  // Posterior mean (eq. 7).
  auto pred_original_coeff = (alpha_prod_t_prev.pow(0.5) * current_beta_t) / beta_prod_t;
  auto current_sample_coeff = current_alpha_t.pow(0.5) * beta_prod_t_prev / beta_prod_t;
  auto prev_sample = pred_original_coeff * pred_original + current_sample_coeff * sample;

  if (t > 0) {
    // "fixed_small" variance, recomputed as diffusers' _get_variance does.
    auto noise = variance_noise.defined() ? variance_noise : torch::randn(model_output.sizes(), model_output.options());
    auto variance =
        one_minus(alpha_prod_t_prev) / one_minus(alpha_prod_t) * one_minus(alpha_prod_t / alpha_prod_t_prev);
    variance = torch::clamp(variance, 1e-20);
    prev_sample = prev_sample + variance.pow(0.5) * noise;
  }
  return prev_sample;
}

torch::Tensor NoiseScheduler::ddim_step(const torch::Tensor& model_output, int64_t t,
                                        const torch::Tensor& sample) const {
  if (num_inference_steps_ == 0) throw util::Error("noise scheduler: DDIM needs set_timesteps() before step()");
  const int64_t prev_t = previous_timestep(t);
  auto alpha_prod_t = alpha_prod_at(t);
  auto alpha_prod_t_prev = alpha_prod_at(prev_t);
  auto beta_prod_t = one_minus(alpha_prod_t);

  torch::Tensor pred_original, pred_epsilon;
  if (options_.prediction_type == "epsilon") {
    pred_original = (sample - beta_prod_t.pow(0.5) * model_output) / alpha_prod_t.pow(0.5);
    pred_epsilon = model_output;
  } else {
    pred_original = model_output;
    pred_epsilon = (sample - alpha_prod_t.pow(0.5) * pred_original) / beta_prod_t.pow(0.5);
  }
  if (options_.clip_sample)
    pred_original = pred_original.clamp(-options_.clip_sample_range, options_.clip_sample_range);

  // eta = 0: std_dev_t is 0 * sqrt(variance), kept in the arithmetic as diffusers has it.
  auto variance = (one_minus(alpha_prod_t_prev) / beta_prod_t) * one_minus(alpha_prod_t / alpha_prod_t_prev);
  auto std_dev_t = variance.pow(0.5) * 0.0;
  auto direction = (one_minus(alpha_prod_t_prev) - std_dev_t.pow(2)).pow(0.5) * pred_epsilon;
  return alpha_prod_t_prev.pow(0.5) * pred_original + direction;
}

}  // namespace lrhost::policy::diffusion
