// GR00T's per-embodiment layers (groot_n1_7.py): weights stacked over embodiments and picked per
// sample by embodiment_id, so that one model drives robots with different state/action layouts.
//  - CategorySpecificLinear: y = bmm(x, W[id]) + b[id], W is [E, in, out] (in x out, not out x in).
//  - CategorySpecificMLP: layer2(relu(layer1(x))), the state encoder and the action decoder.
//  - MultiEmbodimentActionEncoder: W3(swish(W2([W1(a) ; sinusoid(t)]))), the noisy action chunk and
//    its flow-matching time bucket as tokens. Its sinusoid is GR00T's own: [sin(t w_k), cos(t w_k)],
//    w_k = exp(-k ln(10000) / (D/2)) with ln(10000) an fp32 tensor (sin first, unlike the DiT's).
#pragma once
#include <torch/torch.h>

namespace lrhost::policy::groot {

class CategorySpecificLinearImpl : public torch::nn::Module {
 public:
  CategorySpecificLinearImpl(int64_t categories, int64_t input_dim, int64_t output_dim);
  // x (B, T, in), ids (B) integer: (B, T, out).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& ids);
  torch::Tensor W, b;
};
TORCH_MODULE(CategorySpecificLinear);

class CategorySpecificMLPImpl : public torch::nn::Module {
 public:
  CategorySpecificMLPImpl(int64_t categories, int64_t input_dim, int64_t hidden_dim, int64_t output_dim);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& ids);
  CategorySpecificLinear layer1{nullptr}, layer2{nullptr};
};
TORCH_MODULE(CategorySpecificMLP);

// GR00T's SinusoidalPositionalEncoding: timesteps (B, T) -> (B, T, dim), float32.
torch::Tensor groot_time_sinusoid(const torch::Tensor& timesteps, int64_t dim);

class MultiEmbodimentActionEncoderImpl : public torch::nn::Module {
 public:
  MultiEmbodimentActionEncoderImpl(int64_t action_dim, int64_t hidden_size, int64_t categories);
  // actions (B, H, action_dim), timesteps (B) integer buckets, ids (B): (B, H, hidden_size).
  torch::Tensor forward(const torch::Tensor& actions, const torch::Tensor& timesteps, const torch::Tensor& ids);
  CategorySpecificLinear W1{nullptr}, W2{nullptr}, W3{nullptr};

 private:
  int64_t hidden_size_;
};
TORCH_MODULE(MultiEmbodimentActionEncoder);

}  // namespace lrhost::policy::groot
