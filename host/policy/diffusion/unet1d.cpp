// The conditional 1-D U-Net: construction in LeRobot's module order and its forward pass.
#include "host/policy/diffusion/unet1d.hpp"

#include <cmath>
#include <utility>

#include "host/nn/forward_hooks.hpp"
#include "host/policy/diffusion/diffusion_config.hpp"

namespace lrhost::policy::diffusion {

// FSDP may wrap these: their forward runs hooked_forward.
[[maybe_unused]] const bool kDiffusionConditionalResidualBlock1dHookable =
    nn::register_hookable_module_type("DiffusionConditionalResidualBlock1d");

torch::Tensor DiffusionSinusoidalPosEmbImpl::forward(const torch::Tensor& x) {
  const int64_t half_dim = dim_ / 2;
  const double scale = std::log(10000.0) / static_cast<double>(half_dim - 1);
  // Integer arange times a float scalar gives float32, as in PyTorch.
  auto frequencies = torch::exp(torch::arange(half_dim, torch::TensorOptions().device(x.device())) * -scale);
  auto angles = x.unsqueeze(-1) * frequencies.unsqueeze(0);
  return torch::cat({angles.sin(), angles.cos()}, -1);
}

DiffusionConv1dBlockImpl::DiffusionConv1dBlockImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                                   int64_t n_groups) {
  block_ = register_module(
      "block",
      torch::nn::Sequential(
          torch::nn::Conv1d(torch::nn::Conv1dOptions(in_channels, out_channels, kernel_size).padding(kernel_size / 2)),
          torch::nn::GroupNorm(torch::nn::GroupNormOptions(n_groups, out_channels)), torch::nn::Mish()));
}

DiffusionConditionalResidualBlock1dImpl::DiffusionConditionalResidualBlock1dImpl(int64_t in_channels,
                                                                                 int64_t out_channels, int64_t cond_dim,
                                                                                 int64_t kernel_size, int64_t n_groups,
                                                                                 bool use_film_scale_modulation)
    : out_channels_(out_channels), use_film_scale_modulation_(use_film_scale_modulation) {
  conv1_ = register_module("conv1", DiffusionConv1dBlock(in_channels, out_channels, kernel_size, n_groups));
  // FiLM: per-channel bias, or scale and bias.
  const int64_t cond_channels = use_film_scale_modulation ? out_channels * 2 : out_channels;
  cond_encoder_ = register_module("cond_encoder",
                                  torch::nn::Sequential(torch::nn::Mish(), torch::nn::Linear(cond_dim, cond_channels)));
  conv2_ = register_module("conv2", DiffusionConv1dBlock(out_channels, out_channels, kernel_size, n_groups));
  if (in_channels != out_channels)
    residual_conv_ =
        register_module("residual_conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(in_channels, out_channels, 1)));
  else
    register_module("residual_conv", torch::nn::Identity());
}

torch::Tensor DiffusionConditionalResidualBlock1dImpl::forward(const torch::Tensor& x, const torch::Tensor& cond) {
  return nn::hooked_forward(*this, [&] {
    auto out = conv1_->forward(x);
    auto cond_embed = cond_encoder_->forward(cond).unsqueeze(-1);  // (B, cond_channels, 1)
    if (use_film_scale_modulation_) {
      auto scale = cond_embed.slice(1, 0, out_channels_);
      auto bias = cond_embed.slice(1, out_channels_);
      out = scale * out + bias;
    } else {
      out = out + cond_embed;
    }
    out = conv2_->forward(out);
    return out + (residual_conv_ ? residual_conv_->forward(x) : x);
  });
}

DiffusionConditionalUnet1dImpl::DiffusionConditionalUnet1dImpl(const DiffusionConfig& config, int64_t action_dim,
                                                               int64_t global_cond_dim) {
  const int64_t embed = config.diffusion_step_embed_dim;
  // Modules that draw initial weights are built one statement each, in LeRobot's order: the order
  // of a call's arguments is up to the compiler.
  torch::nn::Linear step_in(embed, embed * 4);
  torch::nn::Linear step_out(embed * 4, embed);
  diffusion_step_encoder_ =
      register_module("diffusion_step_encoder",
                      torch::nn::Sequential(DiffusionSinusoidalPosEmb(embed), step_in, torch::nn::Mish(), step_out));

  const int64_t cond_dim = embed + global_cond_dim;
  auto residual = [&](int64_t in, int64_t out) {
    return DiffusionConditionalResidualBlock1d(in, out, cond_dim, config.kernel_size, config.n_groups,
                                               config.use_film_scale_modulation);
  };
  // (in, out) channels per encoder level; the decoder walks them backwards.
  const auto& dims = config.down_dims;
  std::vector<std::pair<int64_t, int64_t>> in_out{{action_dim, dims[0]}};
  for (size_t i = 0; i + 1 < dims.size(); ++i) in_out.emplace_back(dims[i], dims[i + 1]);

  auto down_modules = torch::nn::ModuleList();
  for (size_t level = 0; level < in_out.size(); ++level) {
    auto [dim_in, dim_out] = in_out[level];
    Level entry{residual(dim_in, dim_out), residual(dim_out, dim_out), nullptr, nullptr};
    auto modules = torch::nn::ModuleList(entry.first, entry.second);
    if (level + 1 < in_out.size()) {  // downsample all but the last level
      entry.downsample = torch::nn::Conv1d(torch::nn::Conv1dOptions(dim_out, dim_out, 3).stride(2).padding(1));
      modules->push_back(entry.downsample);
    } else {
      modules->push_back(torch::nn::Identity());
    }
    down_modules->push_back(modules);
    down_.push_back(entry);
  }
  register_module("down_modules", down_modules);

  auto mid_modules = torch::nn::ModuleList();
  for (int i = 0; i < 2; ++i) {
    mid_.push_back(residual(dims.back(), dims.back()));
    mid_modules->push_back(mid_.back());
  }
  register_module("mid_modules", mid_modules);

  // LeRobot's "is last" test compares the decoder index with len(in_out) - 1, which it never
  // reaches, so every decoder level upsamples.
  auto up_modules = torch::nn::ModuleList();
  for (size_t level = in_out.size() - 1; level >= 1; --level) {
    auto [dim_out, dim_in] = in_out[level];
    Level entry{
        residual(dim_in * 2, dim_out), residual(dim_out, dim_out), nullptr,
        torch::nn::ConvTranspose1d(torch::nn::ConvTranspose1dOptions(dim_out, dim_out, 4).stride(2).padding(1))};
    up_modules->push_back(torch::nn::ModuleList(entry.first, entry.second, entry.upsample));
    up_.push_back(entry);
  }
  register_module("up_modules", up_modules);

  DiffusionConv1dBlock final_block(dims[0], dims[0], config.kernel_size);
  torch::nn::Conv1d final_projection(torch::nn::Conv1dOptions(dims[0], action_dim, 1));
  final_conv_ = register_module("final_conv", torch::nn::Sequential(final_block, final_projection));
}

torch::Tensor DiffusionConditionalUnet1dImpl::forward(const torch::Tensor& x_in, const torch::Tensor& timestep,
                                                      const torch::Tensor& global_cond) {
  auto x = x_in.permute({0, 2, 1});  // (B, T, D) -> (B, D, T) for the 1-D convolutions
  auto feature = diffusion_step_encoder_->forward(timestep);
  if (global_cond.defined()) feature = torch::cat({feature, global_cond}, -1);

  std::vector<torch::Tensor> skips;
  for (auto& level : down_) {
    x = level.first->forward(x, feature);
    x = level.second->forward(x, feature);
    skips.push_back(x);
    if (level.downsample) x = level.downsample->forward(x);
  }
  for (auto& block : mid_) x = block->forward(x, feature);
  for (auto& level : up_) {
    x = torch::cat({x, skips.back()}, 1);
    skips.pop_back();
    x = level.first->forward(x, feature);
    x = level.second->forward(x, feature);
    x = level.upsample->forward(x);
  }
  x = final_conv_->forward(x);
  return x.permute({0, 2, 1});
}

}  // namespace lrhost::policy::diffusion
