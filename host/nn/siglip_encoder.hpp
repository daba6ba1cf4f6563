// The SigLIP encoder stack (transformers 5.5 SmolVLMVisionMLP, SmolVLMEncoderLayer, SmolVLMEncoder;
// the same as Siglip*): pre-LN layers `x += self_attn(layer_norm1(x)); x += mlp(layer_norm2(x))`
// with mlp = fc2(gelu(fc1)), children registered in transformers' order and under its names
// (layers.{i}.self_attn / layer_norm1 / mlp.fc1 / mlp.fc2 / layer_norm2).
#pragma once
#include <torch/torch.h>

#include "host/nn/siglip_attention.hpp"
#include "host/nn/siglip_config.hpp"

namespace lrhost::nn {

class SiglipMLPImpl : public torch::nn::Module {
 public:
  explicit SiglipMLPImpl(const SiglipVisionConfig& config);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear fc1{nullptr}, fc2{nullptr};

 private:
  std::string gelu_approximate_;  // "tanh" for gelu_pytorch_tanh, "none" for gelu
};
TORCH_MODULE(SiglipMLP);

class SiglipEncoderLayerImpl : public torch::nn::Module {
 public:
  explicit SiglipEncoderLayerImpl(const SiglipVisionConfig& config);
  torch::Tensor forward(const torch::Tensor& hidden_states);

  SiglipAttention self_attn{nullptr};
  torch::nn::LayerNorm layer_norm1{nullptr};
  SiglipMLP mlp{nullptr};
  torch::nn::LayerNorm layer_norm2{nullptr};
};
TORCH_MODULE(SiglipEncoderLayer);

class SiglipEncoderImpl : public torch::nn::Module {
 public:
  explicit SiglipEncoderImpl(const SiglipVisionConfig& config);
  torch::Tensor forward(torch::Tensor hidden_states);

  torch::nn::ModuleList layers{nullptr};
  // Training forwards keep only each layer's input and recompute the layer in backward
  // (activation_checkpoint.hpp); no effect outside grad mode.
  bool gradient_checkpointing = false;
};
TORCH_MODULE(SiglipEncoder);

}  // namespace lrhost::nn
