// GR00T N1.7's action head: training loss and Euler sampling; see groot_action_head.hpp.
#include "host/policy/groot/groot_action_head.hpp"

#include "host/nn/deferred_init.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::groot {

GrootActionHeadImpl::GrootActionHeadImpl(const GrootHeadConfig& config) : config_(config) {
  const auto& c = config_;
  model = register_module("model", AlternateVLDiT(c.dit, c.backbone_embedding_dim, c.attend_text_every_n_blocks));
  state_encoder = register_module("state_encoder",
                                  CategorySpecificMLP(c.max_num_embodiments, c.max_state_dim * c.state_history_length,
                                                      c.hidden_size, c.input_embedding_dim));
  action_encoder = register_module(
      "action_encoder", MultiEmbodimentActionEncoder(c.max_action_dim, c.input_embedding_dim, c.max_num_embodiments));
  action_decoder = register_module(
      "action_decoder", CategorySpecificMLP(c.max_num_embodiments, c.hidden_size, c.hidden_size, c.max_action_dim));
  if (c.use_vlln)
    vlln = register_module("vlln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.backbone_embedding_dim})));
  if (c.vl_self_attention.num_layers > 0)
    vl_self_attention = register_module("vl_self_attention", SelfAttentionTransformer(c.vl_self_attention));
  if (c.add_pos_embed) {
    position_embedding =
        register_module("position_embedding", torch::nn::Embedding(c.max_seq_len, c.input_embedding_dim));
    torch::NoGradGuard no_grad;
    position_embedding->weight.normal_(0.0, 0.02);
  }
  nn::release_parameters(*this);  // the encoders and decoder (nn/deferred_init.hpp)
}

torch::Tensor GrootActionHeadImpl::vl_features(const GrootHeadInputs& inputs) {
  auto vl = inputs.backbone_features;
  if (vlln) vl = vlln(vl);
  return vl_self_attention ? vl_self_attention(vl) : vl;
}

torch::Tensor GrootActionHeadImpl::state_features(const GrootHeadInputs& inputs) {
  const auto& state = inputs.state;
  if (state.dim() != 3 || state.size(1) != config_.state_history_length || state.size(2) != config_.max_state_dim)
    throw util::DataError("GR00T state must be (B, " + std::to_string(config_.state_history_length) + ", " +
                          std::to_string(config_.max_state_dim) + "), got " + c10::str(state.sizes()));
  return state_encoder(state.view({state.size(0), 1, -1}), inputs.embodiment_id);
}

torch::Tensor GrootActionHeadImpl::action_tokens(const torch::Tensor& actions, const torch::Tensor& timesteps,
                                                 const torch::Tensor& embodiment_id) {
  auto tokens = action_encoder(actions, timesteps, embodiment_id);
  if (position_embedding)
    tokens =
        tokens + position_embedding(
                     torch::arange(tokens.size(1), torch::TensorOptions().dtype(torch::kLong).device(tokens.device())))
                     .unsqueeze(0);
  return tokens;
}

torch::Tensor GrootActionHeadImpl::velocity(const GrootHeadInputs& inputs, const torch::Tensor& vl,
                                            const torch::Tensor& state, const torch::Tensor& actions,
                                            const torch::Tensor& timesteps) {
  const auto tokens = torch::cat({state, action_tokens(actions, timesteps, inputs.embodiment_id)}, 1);
  const auto out = model(tokens, vl, timesteps, inputs.image_mask, inputs.backbone_attention_mask);
  const auto decoded = action_decoder(out, inputs.embodiment_id);
  return decoded.narrow(1, decoded.size(1) - actions.size(1), actions.size(1));  // the state token dropped
}

void GrootActionHeadImpl::check_action(const torch::Tensor& action, const torch::Tensor& action_mask) const {
  if (action.dim() != 3 || action.size(2) != config_.max_action_dim || action_mask.sizes() != action.sizes())
    throw util::DataError("GR00T action and action_mask must be (B, H, " + std::to_string(config_.max_action_dim) +
                          "), got " + c10::str(action.sizes()) + " and " + c10::str(action_mask.sizes()));
}

torch::Tensor GrootActionHeadImpl::flow_loss(const GrootHeadInputs& inputs, const torch::Tensor& vl,
                                             const torch::Tensor& state, const torch::Tensor& action,
                                             const torch::Tensor& action_mask, const torch::Tensor& noise,
                                             const torch::Tensor& time) {
  const auto t = time.to(action.device(), action.scalar_type()).view({-1, 1, 1});
  const auto noisy = (1 - t) * noise + t * action;
  const auto target = action - noise;
  const auto buckets = (t.select(2, 0).select(1, 0) * config_.num_timestep_buckets).to(torch::kLong);
  const auto predicted = velocity(inputs, vl, state, noisy, buckets);
  const auto per_element = torch::mse_loss(predicted, target, at::Reduction::None) * action_mask;
  return per_element.sum() / (action_mask.sum() + 1e-6);
}

torch::Tensor GrootActionHeadImpl::loss(const GrootHeadInputs& inputs, const torch::Tensor& action,
                                        const torch::Tensor& action_mask, const torch::Tensor& noise,
                                        const torch::Tensor& time, const torch::Tensor& state_dropped) {
  check_action(action, action_mask);
  if (noise.sizes() != action.sizes())
    throw util::DataError("GR00T noise must be shaped as the action " + c10::str(action.sizes()) + ", got " +
                          c10::str(noise.sizes()));
  const auto vl = vl_features(inputs);
  auto state = state_features(inputs);
  if (state_dropped.defined())
    state = state * (1 - state_dropped.to(state.device()).view({-1, 1, 1}).to(state.scalar_type()));
  return flow_loss(inputs, vl, state, action, action_mask, noise, time);
}

torch::Tensor GrootActionHeadImpl::training_loss(const GrootHeadInputs& inputs, const torch::Tensor& action,
                                                 const torch::Tensor& action_mask) {
  check_action(action, action_mask);
  const auto vl = vl_features(inputs);  // its dropouts draw first
  auto state = state_features(inputs);
  if (is_training() && config_.state_dropout_prob > 0) {
    const auto dropped = torch::rand({state.size(0)}, state.options()) < config_.state_dropout_prob;
    state = state * (1 - dropped.view({-1, 1, 1}).to(state.scalar_type()));
  }
  const auto noise = torch::randn(action.sizes(), action.options());
  const auto time = sample_time(action.size(0));
  return flow_loss(inputs, vl, state, action, action_mask, noise, time);
}

torch::Tensor GrootActionHeadImpl::sample(const GrootHeadInputs& inputs, const torch::Tensor& noise) {
  const auto vl = vl_features(inputs);
  const auto state = state_features(inputs);
  auto actions = noise;
  const int64_t steps = config_.num_inference_timesteps;
  const double dt = 1.0 / static_cast<double>(steps);
  for (int64_t k = 0; k < steps; ++k) {
    const auto bucket = static_cast<int64_t>(static_cast<double>(k) / static_cast<double>(steps) *
                                             static_cast<double>(config_.num_timestep_buckets));
    const auto timesteps =
        torch::full({actions.size(0)}, bucket, torch::TensorOptions().dtype(torch::kLong).device(actions.device()));
    actions = actions + dt * velocity(inputs, vl, state, actions, timesteps);
  }
  return actions;
}

torch::Tensor GrootActionHeadImpl::sample_time(int64_t batch) const {
  const auto concentration =
      torch::tensor({static_cast<float>(config_.noise_beta_alpha), static_cast<float>(config_.noise_beta_beta)})
          .expand({batch, 2});
  const auto beta = at::_sample_dirichlet(concentration).select(-1, 0);
  return (1 - beta) * config_.noise_s;
}

}  // namespace lrhost::policy::groot
