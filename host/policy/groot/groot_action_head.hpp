// GR00T N1.7's action head (LeRobot's GR00TN17ActionHead, groot_n1_7.py): the VL features through
// vlln and vl_self_attention, the state and the noisy action chunk encoded per embodiment, the
// AlternateVLDiT over [state token, action tokens] conditioned on the flow-matching time bucket, and
// the per-embodiment decoder. GR00T's flow convention (the opposite of pi0's): t = 0 is noise and
// t = 1 data, x_t = (1 - t) noise + t action, target action - noise, bucket floor(1000 t); the loss
// is the MSE masked by action_mask over its mask elements (Σ mse·mask / (Σ mask + 1e-6)); sampling
// takes num_inference_timesteps Euler steps from t = 0. Module names are LeRobot's
// (`action_head.` + the names below), so its state dict loads as it is.
#pragma once
#include <torch/torch.h>

#include <optional>

#include "host/policy/groot/category_specific.hpp"
#include "host/policy/groot/dit_blocks.hpp"
#include "host/policy/groot/groot_head_config.hpp"

namespace lrhost::policy::groot {

// What the backbone gives the head, and the state.
struct GrootHeadInputs {
  torch::Tensor backbone_features;        // (B, S, backbone_embedding_dim)
  torch::Tensor backbone_attention_mask;  // (B, S) bool, false on (left) padding
  torch::Tensor image_mask;               // (B, S) bool, true on image tokens
  torch::Tensor state;                    // (B, state_history_length, max_state_dim)
  torch::Tensor embodiment_id;            // (B) integer
};

class GrootActionHeadImpl : public torch::nn::Module {
 public:
  explicit GrootActionHeadImpl(const GrootHeadConfig& config);

  // The training loss for action (B, H, max_action_dim) with its mask, the noise (B, H, A) and the
  // time (B, in [0, noise_s]) the caller drew (sample_time; LeRobot draws noise first, then time).
  // state_dropped: (B) bool, the samples whose state features are zeroed (training's state
  // dropout), or undefined for none.
  torch::Tensor loss(const GrootHeadInputs& inputs, const torch::Tensor& action, const torch::Tensor& action_mask,
                     const torch::Tensor& noise, const torch::Tensor& time, const torch::Tensor& state_dropped = {});
  // The training forward with LeRobot's own draws, in its order on the default generator: the
  // vl_self_attention dropouts, state dropout rand(B) < state_dropout_prob (training only), the noise
  // randn(action.shape), the Beta time (CPU), then the DiT's dropouts. In eval mode only the noise and
  // the time are drawn.
  torch::Tensor training_loss(const GrootHeadInputs& inputs, const torch::Tensor& action,
                              const torch::Tensor& action_mask);
  // The action chunk from `noise` (B, action_horizon, A) after num_inference_timesteps Euler steps.
  torch::Tensor sample(const GrootHeadInputs& inputs, const torch::Tensor& noise);
  // LeRobot's sample_time: (1 - Beta(alpha, beta).sample([batch])) * noise_s, drawn from the CPU
  // generator (a Dirichlet sample's first component, as torch.distributions.Beta draws it).
  torch::Tensor sample_time(int64_t batch) const;

  const GrootHeadConfig& config() const { return config_; }

  AlternateVLDiT model{nullptr};
  CategorySpecificMLP state_encoder{nullptr};
  MultiEmbodimentActionEncoder action_encoder{nullptr};
  CategorySpecificMLP action_decoder{nullptr};
  torch::nn::LayerNorm vlln{nullptr};                   // null without use_vlln
  SelfAttentionTransformer vl_self_attention{nullptr};  // null with no layers
  torch::nn::Embedding position_embedding{nullptr};     // null without add_pos_embed

 private:
  torch::Tensor vl_features(const GrootHeadInputs& inputs);
  torch::Tensor state_features(const GrootHeadInputs& inputs);
  // The action tokens of `actions` at bucket `timesteps` (B), position embeddings added.
  torch::Tensor action_tokens(const torch::Tensor& actions, const torch::Tensor& timesteps,
                              const torch::Tensor& embodiment_id);
  torch::Tensor velocity(const GrootHeadInputs& inputs, const torch::Tensor& vl, const torch::Tensor& state,
                         const torch::Tensor& actions, const torch::Tensor& timesteps);
  // The loss once the VL features and state features are computed (and any state dropout applied).
  torch::Tensor flow_loss(const GrootHeadInputs& inputs, const torch::Tensor& vl, const torch::Tensor& state,
                          const torch::Tensor& action, const torch::Tensor& action_mask, const torch::Tensor& noise,
                          const torch::Tensor& time);
  void check_action(const torch::Tensor& action, const torch::Tensor& action_mask) const;

  GrootHeadConfig config_;
};
TORCH_MODULE(GrootActionHead);

}  // namespace lrhost::policy::groot
