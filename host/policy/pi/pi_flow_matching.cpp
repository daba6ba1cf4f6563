// PiFlowMatching: pi0/pi05 prefix and suffix embeddings, the training loss and Euler sampling, each step
// in LeRobot's order and dtypes; the masks, positions and the Euler loop are the shared ones of
// host/policy/common.
#include "host/policy/pi/pi_flow_matching.hpp"

#include "host/nn/gemma_decoder_layer.hpp"
#include "host/nn/linear.hpp"
#include "host/policy/common/flow_matching.hpp"
#include "host/policy/common/prefix_suffix_masks.hpp"

namespace lrhost::policy::pi {
namespace {

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out));
}

torch::Tensor bool_ones(int64_t batch, int64_t length, const torch::Device& device) {
  return torch::ones({batch, length}, torch::TensorOptions(torch::kBool).device(device));
}

}  // namespace

PiFlowMatchingImpl::PiFlowMatchingImpl(PiVariant variant, const PiConfigFields& config, const PiGeometry& geometry)
    : variant_(variant),
      chunk_size_(config.chunk_size),
      num_inference_steps_(config.num_inference_steps),
      min_period_(config.min_period),
      max_period_(config.max_period) {
  const PaliGemmaWithExpertOptions options{.freeze_vision_encoder = config.freeze_vision_encoder,
                                           .train_expert_only = config.train_expert_only,
                                           .gradient_checkpointing = config.gradient_checkpointing,
                                           .bfloat16 = config.dtype == "bfloat16"};
  paligemma_with_expert = register_module("paligemma_with_expert", PaliGemmaWithExpert(geometry, options));
  const int64_t width = geometry.expert.hidden_size;
  action_in_proj = register_module("action_in_proj", linear(config.max_action_dim, width));
  action_out_proj = register_module("action_out_proj", linear(width, config.max_action_dim));
  if (variant == PiVariant::pi0) {
    state_proj = register_module("state_proj", linear(config.max_state_dim, width));
    action_time_mlp_in = register_module("action_time_mlp_in", linear(2 * width, width));
    action_time_mlp_out = register_module("action_time_mlp_out", linear(width, width));
  } else {
    time_mlp_in = register_module("time_mlp_in", linear(width, width));
    time_mlp_out = register_module("time_mlp_out", linear(width, width));
  }
}

PiFlowMatchingImpl::Prefix PiFlowMatchingImpl::embed_prefix(const PiInputs& inputs) {
  std::vector<torch::Tensor> embeddings, pad_masks;
  for (std::size_t c = 0; c < inputs.images.size(); ++c) {
    auto image = paligemma_with_expert->embed_image(inputs.images[c]);
    embeddings.push_back(image);
    pad_masks.push_back(inputs.image_masks[c].unsqueeze(1).expand({image.size(0), image.size(1)}));
  }
  embeddings.push_back(paligemma_with_expert->embed_language_tokens(inputs.language_tokens));
  pad_masks.push_back(inputs.language_masks.to(torch::kBool));
  Prefix prefix;
  prefix.embeddings = torch::cat(embeddings, 1);  // type-promotes (fp32 images + bf16 text -> fp32)
  prefix.pad_masks = torch::cat(pad_masks, 1);
  // One bidirectional block: every prefix token has ar = 0.
  prefix.att_masks = torch::zeros_like(prefix.pad_masks, torch::kLong);
  return prefix;
}

PiFlowMatchingImpl::Suffix PiFlowMatchingImpl::embed_suffix(const torch::Tensor& state,
                                                            const torch::Tensor& noisy_actions,
                                                            const torch::Tensor& time) {
  const int64_t width = action_in_proj->weight.size(0);
  auto time_embedding = common::sinusoidal_time_embedding(time, width, min_period_, max_period_).to(time.scalar_type());
  auto action = nn::apply_linear(action_in_proj, noisy_actions);
  const int64_t batch = action.size(0);
  const auto device = action.device();
  auto ar = torch::zeros({batch, chunk_size_}, torch::TensorOptions(torch::kLong).device(device));
  ar.select(1, 0).fill_(1);  // the actions form one block after everything before them
  Suffix suffix;
  if (variant_ == PiVariant::pi05) {
    auto cond = torch::silu(nn::apply_linear(time_mlp_in, time_embedding));
    suffix.cond = torch::silu(nn::apply_linear(time_mlp_out, cond));
    suffix.embeddings = action;
    suffix.pad_masks = bool_ones(batch, action.size(1), device);
    suffix.att_masks = ar;
    return suffix;
  }
  auto state_input = state_proj->weight.scalar_type() == torch::kFloat32 ? state.to(torch::kFloat32) : state;
  auto state_token = nn::apply_linear(state_proj, state_input).unsqueeze(1);
  auto fused = torch::cat({action, time_embedding.unsqueeze(1).expand_as(action)}, 2);
  fused = nn::apply_linear(action_time_mlp_out, torch::silu(nn::apply_linear(action_time_mlp_in, fused)));
  suffix.embeddings = torch::cat({state_token, fused}, 1);
  suffix.pad_masks = bool_ones(batch, 1 + fused.size(1), device);
  // The state token is its own block, before the actions' block.
  suffix.att_masks = torch::cat({torch::ones({batch, 1}, ar.options()), ar}, 1);
  return suffix;
}

torch::Tensor PiFlowMatchingImpl::velocity(const torch::Tensor& suffix_out) {
  auto last = suffix_out.slice(1, suffix_out.size(1) - chunk_size_).to(torch::kFloat32);
  return nn::apply_linear(action_out_proj, last);
}

torch::Tensor PiFlowMatchingImpl::forward(const PiInputs& inputs, const torch::Tensor& actions,
                                          const torch::Tensor& noise, const torch::Tensor& time) {
  const auto noisy = common::noisy_actions(actions, noise, time);
  auto prefix = embed_prefix(inputs);
  auto suffix = embed_suffix(inputs.state, noisy.x_t, time);
  auto prefix_embeddings = prefix.embeddings;
  auto suffix_embeddings = suffix.embeddings;
  if (paligemma_with_expert->layers_bfloat16()) {
    prefix_embeddings = prefix_embeddings.to(torch::kBFloat16);
    suffix_embeddings = suffix_embeddings.to(torch::kBFloat16);
  }
  auto pad_masks = torch::cat({prefix.pad_masks, suffix.pad_masks}, 1);
  auto att_masks = torch::cat({prefix.att_masks, suffix.att_masks}, 1);
  auto mask = nn::additive_attention_mask(common::make_att_2d_masks(pad_masks, att_masks));
  auto positions = common::positions_from_pad_masks(pad_masks);
  auto suffix_out = paligemma_with_expert->forward(prefix_embeddings, suffix_embeddings, mask, positions, suffix.cond);
  return torch::mse_loss(noisy.u_t, velocity(suffix_out), at::Reduction::None);
}

torch::Tensor PiFlowMatchingImpl::sample_actions(const PiInputs& inputs, const torch::Tensor& noise) {
  auto prefix = embed_prefix(inputs);
  auto prefix_mask = nn::additive_attention_mask(common::make_att_2d_masks(prefix.pad_masks, prefix.att_masks));
  auto prefix_positions = common::positions_from_pad_masks(prefix.pad_masks);
  const auto cache = paligemma_with_expert->fill_cache(prefix.embeddings, prefix_mask, prefix_positions);
  // The suffix's masks depend only on its length, not on x_t or t: built at the first step, reused.
  torch::Tensor mask, positions;
  return common::euler_integrate(noise, num_inference_steps_, [&](const torch::Tensor& x_t, const torch::Tensor& time) {
    auto suffix = embed_suffix(inputs.state, x_t, time);
    if (!mask.defined()) {
      mask = nn::additive_attention_mask(
          common::suffix_attention_mask(prefix.pad_masks, suffix.pad_masks, suffix.att_masks));
      positions = common::suffix_positions(prefix.pad_masks, suffix.pad_masks);
    }
    return velocity(paligemma_with_expert->forward_suffix(suffix.embeddings, mask, positions, cache, suffix.cond));
  });
}

}  // namespace lrhost::policy::pi
