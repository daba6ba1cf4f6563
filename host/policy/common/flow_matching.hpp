// Flow matching as the openpi-derived VLA policies (SmolVLA, pi0, pi05) use it, after LeRobot 0.6.1
// policies/common/{flow_matching,vla_utils}.py: the samplers in LeRobot's RNG order, the noisy input
// and regression target of the training loss, the sinusoidal embedding of the flow time, and the
// forward-Euler sampling loop from t = 1 (noise) to t = 0 (actions). The loop knows nothing of a
// model: each policy fills its prefix KV cache once and passes its own denoise step as the velocity.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <optional>

namespace lrhost::policy::common {

// Standard-normal fp32 noise of `shape` on `device`, from that device's default generator
// (torch.normal): the flow-matching x_1 sample. Policies draw it before the time, as LeRobot does.
torch::Tensor sample_noise(at::IntArrayRef shape, const torch::Device& device);

// The flow time of each sample: Beta(alpha, beta) · scale + offset (openpi's convention keeps t
// away from 0). SmolVLA and pi0 use the defaults.
struct BetaTimeOptions {
  double alpha = 1.5, beta = 1.0;
  double scale = 0.999, offset = 0.001;
};

// (batch,) fp32 on `device`. Drawn on the CPU (torch.distributions.Beta is a Dirichlet over
// [alpha, beta] through _sample_dirichlet, which exists on the CPU only) from `generator`, or from
// the default CPU generator when none is given, so torch::manual_seed makes it reproducible.
torch::Tensor sample_time_beta(int64_t batch, const torch::Device& device, const BetaTimeOptions& options = {},
                               std::optional<at::Generator> generator = std::nullopt);

// The training pair: x_t = t·noise + (1 − t)·actions (the model's input) and u_t = noise − actions
// (the velocity it must predict), with time (B,) broadcast over the other dimensions of actions.
struct NoisyActions {
  torch::Tensor x_t, u_t;
};
NoisyActions noisy_actions(const torch::Tensor& actions, const torch::Tensor& noise, const torch::Tensor& time);

// openpi's create_sinusoidal_pos_embedding in float64: time (B,) -> (B, dimension), the sin half
// first, periods spaced geometrically from min_period to max_period. Throws util::ConfigError for an
// odd dimension.
torch::Tensor sinusoidal_time_embedding(const torch::Tensor& time, int64_t dimension, double min_period,
                                        double max_period);

// The velocity at (x_t, time): time is (B,) fp32 on x_t's device, the same value in every row.
// Must return a tensor of x_t's shape.
using VelocityField = std::function<torch::Tensor(const torch::Tensor& x_t, const torch::Tensor& time)>;

// Forward Euler from t = 1 to t = 0 in num_steps steps: dt = −1/num_steps, t = 1 + step·dt (in
// double, then fp32), x ← x + dt·v(x, t). Returns x at t = 0. Throws util::ConfigError for
// num_steps < 1.
torch::Tensor euler_integrate(const torch::Tensor& noise, int64_t num_steps, const VelocityField& velocity);

}  // namespace lrhost::policy::common
