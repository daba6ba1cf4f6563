// The Action Chunking Transformer network (LeRobot's `ACT`, ACTPolicy.model): an optional VAE
// encoder over [cls, robot state, action chunk] that yields the latent's distribution, a ResNet-18
// backbone for the cameras, a transformer encoder over [latent, state, env state, camera pixels]
// and a decoder whose chunk_size queries regress the action chunk. Submodules, parameters and the
// one buffer (vae_encoder_pos_enc) carry LeRobot's names and are registered in ACT.__init__'s order.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "host/policy/act/act_config.hpp"
#include "host/policy/act/act_layers.hpp"
#include "host/policy/vision/resnet18.hpp"

namespace lrhost::policy::act {

struct ACTOutput {
  torch::Tensor actions;       // (B, chunk_size, action_dim)
  torch::Tensor mu;            // (B, latent_dim); undefined when the VAE encoder did not run
  torch::Tensor log_sigma_x2;  // (B, latent_dim), 2·log σ; undefined likewise
};

class ACTImpl : public torch::nn::Module {
 public:
  explicit ACTImpl(const ACTConfig& config);
  // `batch` holds observation.state / observation.environment_state as configured, and for the VAE
  // (training mode only) action (B, chunk, A) with action_is_pad (B, chunk); `images` one (B, C, H, W)
  // tensor per camera in config order. The latent is sampled (one randn_like(mu)) only when the VAE
  // encoder runs; otherwise it is zero.
  ACTOutput forward(const std::map<std::string, torch::Tensor>& batch, const std::vector<torch::Tensor>& images);

 private:
  const torch::Tensor& input(const std::map<std::string, torch::Tensor>& batch, const std::string& key) const;
  // The 2-D position embedding (1, dim_model, h, w) of a camera feature map, in its dtype.
  torch::Tensor sinusoid_for(const torch::Tensor& features) const;

  ACTConfig config_;
  const PolicyFeature* robot_state_ = nullptr;  // into config_
  const PolicyFeature* env_state_ = nullptr;
  bool has_images_ = false;

  ACTEncoder vae_encoder_{nullptr};
  torch::nn::Embedding vae_encoder_cls_embed_{nullptr};
  torch::nn::Linear vae_encoder_robot_state_input_proj_{nullptr}, vae_encoder_action_input_proj_{nullptr},
      vae_encoder_latent_output_proj_{nullptr};
  torch::Tensor vae_encoder_pos_enc_;
  vision::ResNet18 backbone_{nullptr};
  ACTEncoder encoder_{nullptr};
  ACTDecoder decoder_{nullptr};
  torch::nn::Linear encoder_robot_state_input_proj_{nullptr}, encoder_env_state_input_proj_{nullptr},
      encoder_latent_input_proj_{nullptr};
  torch::nn::Conv2d encoder_img_feat_input_proj_{nullptr};
  torch::nn::Embedding encoder_1d_feature_pos_embed_{nullptr}, decoder_pos_embed_{nullptr};
  torch::nn::Linear action_head_{nullptr};
};
TORCH_MODULE(ACT);

}  // namespace lrhost::policy::act
