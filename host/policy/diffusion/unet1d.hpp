// The denoising network of the Diffusion policy: LeRobot's DiffusionConditionalUnet1d, a 1-D
// convolutional U-Net over the action horizon whose residual blocks are FiLM-conditioned on the
// diffusion timestep embedding concatenated with the observation features. Modules are registered
// with LeRobot's names and in its order (diffusion_step_encoder.{1,3}, down_modules.i.{0,1,2},
// mid_modules.{0,1}, up_modules.i.{0,1,2}, final_conv.{0,1}), so state_dict keys and the parameter
// order (optimizer state indices) equal PyTorch's. As in the reference code the upsampling
// ConvTranspose1d exists on every decoder level, and the final block keeps 8 groups whatever n_groups.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace lrhost::policy::diffusion {

struct DiffusionConfig;

// Transformer-style sinusoidal embedding of the timestep: [sin(t w_k), cos(t w_k)], w_k =
// 10000^(-k/(half-1)).
class DiffusionSinusoidalPosEmbImpl : public torch::nn::Module {
 public:
  explicit DiffusionSinusoidalPosEmbImpl(int64_t dim) : dim_(dim) {}
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t dim_;
};
TORCH_MODULE(DiffusionSinusoidalPosEmb);

// Conv1d -> GroupNorm -> Mish, as `block.{0,1,2}`.
class DiffusionConv1dBlockImpl : public torch::nn::Module {
 public:
  DiffusionConv1dBlockImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t n_groups = 8);
  torch::Tensor forward(const torch::Tensor& x) { return block_->forward(x); }

 private:
  torch::nn::Sequential block_{nullptr};
};
TORCH_MODULE(DiffusionConv1dBlock);

// Two conv blocks with FiLM in between (per-channel scale and bias, or bias only) and a residual
// connection (1x1 conv when the width changes).
class DiffusionConditionalResidualBlock1dImpl : public torch::nn::Module {
 public:
  DiffusionConditionalResidualBlock1dImpl(int64_t in_channels, int64_t out_channels, int64_t cond_dim,
                                          int64_t kernel_size, int64_t n_groups, bool use_film_scale_modulation);
  // x: (B, in_channels, T), cond: (B, cond_dim) -> (B, out_channels, T).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cond);

 private:
  int64_t out_channels_;
  bool use_film_scale_modulation_;
  DiffusionConv1dBlock conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Sequential cond_encoder_{nullptr};
  torch::nn::Conv1d residual_conv_{nullptr};  // null: identity
};
TORCH_MODULE(DiffusionConditionalResidualBlock1d);

class DiffusionConditionalUnet1dImpl : public torch::nn::Module {
 public:
  DiffusionConditionalUnet1dImpl(const DiffusionConfig& config, int64_t action_dim, int64_t global_cond_dim);
  // x: (B, T, action_dim), timestep: (B,) integer, global_cond: (B, global_cond_dim) or undefined
  // -> (B, T, action_dim).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& timestep, const torch::Tensor& global_cond = {});

 private:
  struct Level {
    DiffusionConditionalResidualBlock1d first{nullptr}, second{nullptr};
    torch::nn::Conv1d downsample{nullptr};         // encoder levels; null: Identity (last level)
    torch::nn::ConvTranspose1d upsample{nullptr};  // decoder levels (all of them)
  };
  torch::nn::Sequential diffusion_step_encoder_{nullptr};
  std::vector<Level> down_, up_;
  std::vector<DiffusionConditionalResidualBlock1d> mid_;
  torch::nn::Sequential final_conv_{nullptr};
};
TORCH_MODULE(DiffusionConditionalUnet1d);

}  // namespace lrhost::policy::diffusion
