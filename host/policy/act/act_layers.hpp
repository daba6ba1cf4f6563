// The transformer blocks of ACT with LeRobot's module names (self_attn, multihead_attn, linear1,
// linear2, norm1..3; ACTEncoder/ACTDecoder holding `layers` and `norm`): post-norm by default,
// pre-norm when configured, dropout inside attention and after each sub-block and in the
// feed-forward, position embeddings added to queries and keys only. ACTEncoderLayer and
// ACTDecoderLayer are the FSDP wrap units.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "host/nn/dropout.hpp"
#include "host/policy/act/act_attention.hpp"
#include "host/policy/act/act_config.hpp"

namespace lrhost::policy::act {

// LeRobot's get_activation_fn (relu, gelu, glu over the last dimension).
torch::Tensor apply_activation(const std::string& name, const torch::Tensor& x);

class ACTEncoderLayerImpl : public torch::nn::Module {
 public:
  explicit ACTEncoderLayerImpl(const ACTConfig& config);
  // x (S, B, D); pos_embed broadcastable to x (or undefined); key_padding_mask (B, S) or undefined.
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& pos_embed = {},
                        const torch::Tensor& key_padding_mask = {});

 private:
  torch::Tensor dropout(const torch::Tensor& x) { return nn::dropout(x, dropout_, is_training()); }

  MultiheadAttention self_attn_{nullptr};
  torch::nn::Linear linear1_{nullptr}, linear2_{nullptr};
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  double dropout_;
  std::string activation_;
  bool pre_norm_;
};
TORCH_MODULE(ACTEncoderLayer);

class ACTDecoderLayerImpl : public torch::nn::Module {
 public:
  explicit ACTDecoderLayerImpl(const ACTConfig& config);
  // x (DS, B, D) decoder tokens, encoder_out (ES, B, D); position embeddings (DS|ES, 1, D) or undefined.
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& encoder_out, const torch::Tensor& decoder_pos_embed = {},
                        const torch::Tensor& encoder_pos_embed = {});

 private:
  torch::Tensor dropout(const torch::Tensor& x) { return nn::dropout(x, dropout_, is_training()); }

  MultiheadAttention self_attn_{nullptr}, multihead_attn_{nullptr};
  torch::nn::Linear linear1_{nullptr}, linear2_{nullptr};
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr}, norm3_{nullptr};
  double dropout_;
  std::string activation_;
  bool pre_norm_;
};
TORCH_MODULE(ACTDecoderLayer);

// A stack of encoder layers (n_vae_encoder_layers for the VAE encoder, else n_encoder_layers),
// followed by a LayerNorm `norm` only with pre_norm (LeRobot's nn.Identity has no state).
class ACTEncoderImpl : public torch::nn::Module {
 public:
  ACTEncoderImpl(const ACTConfig& config, bool is_vae_encoder);
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& pos_embed = {},
                        const torch::Tensor& key_padding_mask = {});

 private:
  std::vector<ACTEncoderLayer> layers_;
  torch::nn::LayerNorm norm_{nullptr};
};
TORCH_MODULE(ACTEncoder);

// A stack of decoder layers followed by a LayerNorm `norm`.
class ACTDecoderImpl : public torch::nn::Module {
 public:
  explicit ACTDecoderImpl(const ACTConfig& config);
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& encoder_out, const torch::Tensor& decoder_pos_embed = {},
                        const torch::Tensor& encoder_pos_embed = {});

 private:
  std::vector<ACTDecoderLayer> layers_;
  torch::nn::LayerNorm norm_{nullptr};
};
TORCH_MODULE(ACTDecoder);

}  // namespace lrhost::policy::act
