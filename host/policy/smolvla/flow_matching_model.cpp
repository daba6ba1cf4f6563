// VLAFlowMatching: prefix/suffix embeddings, the training loss and Euler sampling, each step in
// LeRobot's order and dtypes (modeling_smolvla.py); the masks, positions, samplers and the Euler loop
// are the shared ones of host/policy/common.
#include "host/policy/smolvla/flow_matching_model.hpp"

#include <cmath>

#include "host/nn/linear.hpp"
#include "host/policy/common/flow_matching.hpp"
#include "host/policy/common/prefix_suffix_masks.hpp"

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
  auto time_embedding = common::sinusoidal_time_embedding(time, vlm_with_expert->expert_hidden_size(),
                                                          config_.min_period, config_.max_period)
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
  const auto noisy = common::noisy_actions(actions, noise, time);
  auto prefix = embed_prefix(inputs);
  auto suffix = embed_suffix(noisy.x_t, time);
  auto pad_masks = torch::cat({prefix.pad_masks, suffix.pad_masks}, 1);
  auto att_masks = torch::cat({prefix.att_masks, suffix.att_masks}, 1);
  auto mask = common::make_att_2d_masks(pad_masks, att_masks);
  auto positions = common::positions_from_pad_masks(pad_masks);
  auto suffix_out = vlm_with_expert->forward(prefix.embeddings, suffix.embeddings, mask, positions);
  return torch::mse_loss(noisy.u_t, velocity(suffix_out), at::Reduction::None);
}

torch::Tensor VLAFlowMatchingImpl::sample_actions(const PrefixInputs& inputs, const torch::Tensor& noise) {
  auto prefix = embed_prefix(inputs);
  auto prefix_mask = common::make_att_2d_masks(prefix.pad_masks, prefix.att_masks);
  auto prefix_positions = common::positions_from_pad_masks(prefix.pad_masks);
  const auto cache = vlm_with_expert->fill_cache(prefix.embeddings, prefix_mask, prefix_positions);
  // SmolVLA's denoise_step: the suffix attends to the cached prefix (the cache is read, never grown).
  // The suffix's masks depend only on its length, not on x_t or t: built at the first step, reused.
  torch::Tensor mask, positions;
  return common::euler_integrate(noise, config_.num_steps, [&](const torch::Tensor& x_t, const torch::Tensor& time) {
    auto suffix = embed_suffix(x_t, time);
    if (!mask.defined()) {
      mask = common::suffix_attention_mask(prefix.pad_masks, suffix.pad_masks, suffix.att_masks);
      positions = common::suffix_positions(prefix.pad_masks, suffix.pad_masks);
    }
    return velocity(vlm_with_expert->forward_suffix(suffix.embeddings, mask, positions, cache));
  });
}

torch::Tensor VLAFlowMatchingImpl::sample_noise(at::IntArrayRef shape, const torch::Device& device) {
  return common::sample_noise(shape, device);
}

torch::Tensor VLAFlowMatchingImpl::sample_time(int64_t batch, const torch::Device& device) {
  return common::sample_time_beta(batch, device);
}

}  // namespace lrhost::policy::smolvla
