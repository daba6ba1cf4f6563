// VLAFlowMatching: prefix/suffix embeddings, masks, the training loss and Euler sampling, each step in
// LeRobot's order and dtypes (modeling_smolvla.py, common/vla_utils.py, common/flow_matching.py).
#include "host/policy/smolvla/flow_matching_model.hpp"

#include <cmath>
#include <numbers>

#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::smolvla {
namespace {

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out));
}

// Right-pads dim 1 of (B, N, ...) to `length` with `value` (LeRobot's pad_tensor).
torch::Tensor pad_sequence(const torch::Tensor& x, int64_t length, double value) {
  auto shape = x.sizes().vec();
  shape[1] = length;
  auto out = torch::full(shape, value, x.options());
  out.slice(1, 0, x.size(1)).copy_(x);
  return out;
}

}  // namespace

torch::Tensor make_att_2d_masks(const torch::Tensor& pad_masks, const torch::Tensor& att_masks) {
  auto cumsum = att_masks.cumsum(1);
  auto att_2d = cumsum.unsqueeze(1) <= cumsum.unsqueeze(2);
  auto pad_2d = pad_masks.unsqueeze(1).logical_and(pad_masks.unsqueeze(2));
  return att_2d.logical_and(pad_2d);
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

VLAFlowMatchingImpl::VLAFlowMatchingImpl(const SmolVLAConfig& config, const nn::SmolVLMConfig& vlm_config)
    : config_(config) {
  vlm_with_expert = register_module("vlm_with_expert", SmolVLMWithExpert(config, vlm_config));
  const int64_t expert = vlm_with_expert->expert_hidden_size();
  state_proj = register_module("state_proj", linear(config.max_state_dim, vlm_with_expert->vlm_hidden_size()));
  action_in_proj = register_module("action_in_proj", linear(config.max_action_dim, expert));
  action_out_proj = register_module("action_out_proj", linear(expert, config.max_action_dim));
  action_time_mlp_in = register_module("action_time_mlp_in", linear(expert * 2, expert));
  action_time_mlp_out = register_module("action_time_mlp_out", linear(expert, expert));
  for (auto& p : state_proj->parameters()) p.set_requires_grad(config.train_state_proj);
}

Prefix VLAFlowMatchingImpl::embed_prefix(const PrefixInputs& inputs) {
  std::vector<torch::Tensor> embeddings, pad_masks;
  int64_t ar_zeros = 0;
  for (std::size_t c = 0; c < inputs.images.size(); ++c) {
    const bool cached = c < inputs.image_features.size() && inputs.image_features[c].defined();
    auto image = cached ? inputs.image_features[c] : vlm_with_expert->embed_image(inputs.images[c]);
    // sqrt(width) as a tensor of the embedding's dtype: in bf16 it rounds to 31.0 for width 960.
    const double scale = std::sqrt(static_cast<double>(image.size(-1)));
    image = image * torch::scalar_tensor(scale, image.options());
    const int64_t batch = image.size(0), tokens = image.size(1);
    embeddings.push_back(image);
    pad_masks.push_back(inputs.image_masks[c].unsqueeze(1).expand({batch, tokens}));
    ar_zeros += tokens;
  }
  auto language = vlm_with_expert->embed_language_tokens(inputs.language_tokens);
  language = language * std::sqrt(static_cast<double>(language.size(-1)));
  embeddings.push_back(language);
  pad_masks.push_back(inputs.language_masks.to(torch::kBool));
  ar_zeros += language.size(1);

  auto state = nn::apply_linear(state_proj, inputs.state);
  if (state.dim() == 2) state = state.unsqueeze(1);
  const int64_t batch = state.size(0), state_tokens = state.size(1);
  embeddings.push_back(state);
  pad_masks.push_back(torch::ones({batch, state_tokens}, torch::TensorOptions(torch::kBool).device(state.device())));

  Prefix prefix;
  prefix.embeddings = torch::cat(embeddings, 1);  // type-promotes (bf16 tokens + fp32 state -> fp32)
  prefix.pad_masks = torch::cat(pad_masks, 1);
  auto ar = torch::zeros({1, ar_zeros + state_tokens}, torch::TensorOptions(torch::kLong).device(state.device()));
  ar.slice(1, ar_zeros).fill_(1);
  if (prefix.pad_masks.size(1) < config_.prefix_length) {
    prefix.embeddings = pad_sequence(prefix.embeddings, config_.prefix_length, 0);
    prefix.pad_masks = pad_sequence(prefix.pad_masks, config_.prefix_length, 0);
    ar = pad_sequence(ar, config_.prefix_length, 0);
  }
  prefix.att_masks = ar.expand({batch, -1});
  return prefix;
}

VLAFlowMatchingImpl::Suffix VLAFlowMatchingImpl::embed_suffix(const torch::Tensor& noisy_actions,
                                                              const torch::Tensor& time) {
  auto action = nn::apply_linear(action_in_proj, noisy_actions);
  auto time_embedding =
      sinusoidal_time_embedding(time, vlm_with_expert->expert_hidden_size(), config_.min_period, config_.max_period)
          .to(action.scalar_type());
  time_embedding = time_embedding.unsqueeze(1).expand_as(action);
  auto fused = nn::apply_linear(action_time_mlp_in, torch::cat({action, time_embedding}, 2));
  fused = nn::apply_linear(action_time_mlp_out, torch::silu(fused));
  const int64_t batch = fused.size(0), length = fused.size(1);
  auto device = fused.device();
  // Every action token is its own attention block: causal attention inside the chunk.
  return {fused, torch::ones({batch, length}, torch::TensorOptions(torch::kBool).device(device)),
          torch::ones({batch, config_.chunk_size}, torch::TensorOptions(torch::kLong).device(device))};
}

torch::Tensor VLAFlowMatchingImpl::velocity(const torch::Tensor& suffix_out) {
  auto last = suffix_out.slice(1, suffix_out.size(1) - config_.chunk_size).to(torch::kFloat32);
  return nn::apply_linear(action_out_proj, last);
}

torch::Tensor VLAFlowMatchingImpl::forward(const PrefixInputs& inputs, const torch::Tensor& actions,
                                           const torch::Tensor& noise, const torch::Tensor& time) {
  auto t = time.unsqueeze(1).unsqueeze(2);
  auto x_t = t * noise + (1 - t) * actions;
  auto u_t = noise - actions;
  auto prefix = embed_prefix(inputs);
  auto suffix = embed_suffix(x_t, time);
  auto pad_masks = torch::cat({prefix.pad_masks, suffix.pad_masks}, 1);
  auto att_masks = torch::cat({prefix.att_masks, suffix.att_masks}, 1);
  auto mask = make_att_2d_masks(pad_masks, att_masks);
  auto positions = pad_masks.cumsum(1) - 1;
  auto suffix_out = vlm_with_expert->forward(prefix.embeddings, suffix.embeddings, mask, positions);
  return torch::mse_loss(u_t, velocity(suffix_out), at::Reduction::None);
}

torch::Tensor VLAFlowMatchingImpl::sample_actions(const PrefixInputs& inputs, const torch::Tensor& noise) {
  auto prefix = embed_prefix(inputs);
  auto prefix_mask = make_att_2d_masks(prefix.pad_masks, prefix.att_masks);
  auto prefix_positions = prefix.pad_masks.cumsum(1) - 1;
  const auto cache = vlm_with_expert->fill_cache(prefix.embeddings, prefix_mask, prefix_positions);

  const int64_t batch = prefix.pad_masks.size(0), prefix_length = prefix.pad_masks.size(1);
  const auto prefix_offsets = prefix.pad_masks.sum(-1).unsqueeze(1);
  const double dt = -1.0 / static_cast<double>(config_.num_steps);
  auto x_t = noise;
  for (int64_t step = 0; step < config_.num_steps; ++step) {
    const double t = 1.0 + static_cast<double>(step) * dt;
    auto time = torch::full({batch}, t, noise.options().dtype(torch::kFloat32));
    auto suffix = embed_suffix(x_t, time);
    const int64_t suffix_length = suffix.pad_masks.size(1);
    auto prefix_2d = prefix.pad_masks.unsqueeze(1).expand({batch, suffix_length, prefix_length});
    auto suffix_2d = make_att_2d_masks(suffix.pad_masks, suffix.att_masks);
    auto mask = torch::cat({prefix_2d, suffix_2d}, 2);
    auto positions = prefix_offsets + suffix.pad_masks.cumsum(1) - 1;
    auto out = vlm_with_expert->forward_suffix(suffix.embeddings, mask, positions, cache);
    x_t = x_t + dt * velocity(out);
  }
  return x_t;
}

torch::Tensor VLAFlowMatchingImpl::sample_noise(at::IntArrayRef shape, const torch::Device& device) {
  return at::normal(0.0, 1.0, shape, std::nullopt, torch::TensorOptions(torch::kFloat32).device(device));
}

torch::Tensor VLAFlowMatchingImpl::sample_time(int64_t batch, const torch::Device& device) {
  // torch.distributions.Beta(1.5, 1.0).sample((B,)): a Dirichlet over [alpha, beta], first component,
  // drawn on the CPU generator.
  auto concentration = torch::tensor({1.5f, 1.0f}).expand({batch, 2});
  auto beta = at::_sample_dirichlet(concentration).select(-1, 0);
  return (beta * 0.999 + 0.001).to(device, torch::kFloat32);
}

}  // namespace lrhost::policy::smolvla
