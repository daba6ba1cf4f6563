// Flow-matching samplers, training pair, time embedding and Euler loop, each in LeRobot's order of
// operations and dtypes (policies/common/flow_matching.py, vla_utils.py), since SmolVLA's interop
// tests compare with LeRobot bit for bit.
#include "host/policy/common/flow_matching.hpp"

#include <numbers>
#include <string>

#include "host/util/error.hpp"

namespace lrhost::policy::common {

torch::Tensor sample_noise(at::IntArrayRef shape, const torch::Device& device) {
  return at::normal(0.0, 1.0, shape, std::nullopt, torch::TensorOptions(torch::kFloat32).device(device));
}

torch::Tensor sample_time_beta(int64_t batch, const torch::Device& device, const BetaTimeOptions& options,
                               std::optional<at::Generator> generator) {
  if (!(options.alpha > 0) || !(options.beta > 0))
    throw util::ConfigError("flow matching: the Beta time distribution needs alpha > 0 and beta > 0, got " +
                            std::to_string(options.alpha) + " and " + std::to_string(options.beta));
  // torch.distributions.Beta(alpha, beta).sample((B,)): fp32 concentrations expanded to (B, 2), one
  // Dirichlet draw per row, first component.
  auto concentration =
      torch::tensor({static_cast<float>(options.alpha), static_cast<float>(options.beta)}).expand({batch, 2});
  auto beta = at::_sample_dirichlet(concentration, std::move(generator)).select(-1, 0);
  return (beta * options.scale + options.offset).to(device, torch::kFloat32);
}

NoisyActions noisy_actions(const torch::Tensor& actions, const torch::Tensor& noise, const torch::Tensor& time) {
  if (time.dim() != 1 || actions.dim() < 1 || time.size(0) != actions.size(0) || noise.sizes() != actions.sizes())
    throw util::DataError("flow matching: expected time (B,) and noise shaped like actions (B, ...), got time " +
                          c10::str(time.sizes()) + ", actions " + c10::str(actions.sizes()) + ", noise " +
                          c10::str(noise.sizes()));
  std::vector<int64_t> shape(static_cast<std::size_t>(actions.dim()), 1);
  shape[0] = time.size(0);
  const auto t = time.reshape(shape);
  // LeRobot's op order: t·noise + (1 − t)·actions.
  return {t * noise + (1 - t) * actions, noise - actions};
}

torch::Tensor sinusoidal_time_embedding(const torch::Tensor& time, int64_t dimension, double min_period,
                                        double max_period) {
  if (dimension % 2 != 0)
    throw util::ConfigError("sinusoidal time embedding: dimension (" + std::to_string(dimension) +
                            ") must be divisible by 2");
  auto f64 = torch::TensorOptions(torch::kFloat64).device(time.device());
  auto fraction = torch::linspace(0.0, 1.0, dimension / 2, f64);
  // min_period * (max_period / min_period) ** fraction, then 1/period * 2 * pi, in Python's order.
  auto period = torch::pow(max_period / min_period, fraction) * min_period;
  auto scaling = period.reciprocal() * 2.0 * std::numbers::pi;
  auto input = time.unsqueeze(-1) * scaling;
  return torch::cat({torch::sin(input), torch::cos(input)}, -1);
}

torch::Tensor euler_integrate(const torch::Tensor& noise, int64_t num_steps, const VelocityField& velocity) {
  if (num_steps < 1)
    throw util::ConfigError("flow matching: the Euler sampler needs at least one step, got num_steps = " +
                            std::to_string(num_steps));
  const int64_t batch = noise.size(0);
  const double dt = -1.0 / static_cast<double>(num_steps);
  auto x_t = noise;
  for (int64_t step = 0; step < num_steps; ++step) {
    // The time is computed in double (Python float) and rounded to fp32 once.
    const double t = 1.0 + static_cast<double>(step) * dt;
    auto time = torch::full({batch}, t, noise.options().dtype(torch::kFloat32));
    const auto v_t = velocity(x_t, time);
    // A velocity of another shape would broadcast into x_t and change the chunk's shape silently.
    if (v_t.sizes() != x_t.sizes())
      throw util::DataError("flow matching: the velocity field returned " + c10::str(v_t.sizes()) + " for x_t " +
                            c10::str(x_t.sizes()));
    x_t = x_t + dt * v_t;
  }
  return x_t;
}

}  // namespace lrhost::policy::common
