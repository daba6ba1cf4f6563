// ACT transformer blocks, following LeRobot's forward step for step (including where the skip
// connection is taken in the post-norm and pre-norm variants).
#include "host/policy/act/act_layers.hpp"

#include "host/nn/forward_hooks.hpp"
#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::act {

// FSDP may wrap these: their forward runs hooked_forward.
[[maybe_unused]] const bool kACTEncoderLayerHookable = nn::register_hookable_module_type("ACTEncoderLayer");
[[maybe_unused]] const bool kACTDecoderLayerHookable = nn::register_hookable_module_type("ACTDecoderLayer");
namespace {

torch::nn::LayerNorm layer_norm(int64_t dim) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}));
}

torch::Tensor with_pos(const torch::Tensor& x, const torch::Tensor& pos) {
  return pos.defined() ? x + pos : x;
}

}  // namespace

torch::Tensor apply_activation(const std::string& name, const torch::Tensor& x) {
  if (name == "relu") return torch::relu(x);
  if (name == "gelu") return torch::gelu(x);
  if (name == "glu") return torch::glu(x, -1);
  throw util::ConfigError("activation should be relu/gelu/glu, not '" + name + "'");
}

ACTEncoderLayerImpl::ACTEncoderLayerImpl(const ACTConfig& config)
    : dropout_(config.dropout), activation_(config.feedforward_activation), pre_norm_(config.pre_norm) {
  // Registration order = PyTorch's attribute order = named_parameters() order.
  self_attn_ = register_module("self_attn", MultiheadAttention(config.dim_model, config.n_heads, config.dropout));
  linear1_ = register_module("linear1", torch::nn::Linear(config.dim_model, config.dim_feedforward));
  linear2_ = register_module("linear2", torch::nn::Linear(config.dim_feedforward, config.dim_model));
  norm1_ = register_module("norm1", layer_norm(config.dim_model));
  norm2_ = register_module("norm2", layer_norm(config.dim_model));
}

torch::Tensor ACTEncoderLayerImpl::forward(torch::Tensor x, const torch::Tensor& pos_embed,
                                           const torch::Tensor& key_padding_mask) {
  return nn::hooked_forward(*this, [&] {
    auto skip = x;
    if (pre_norm_) x = norm1_->forward(x);
    auto qk = with_pos(x, pos_embed);
    x = self_attn_->forward(qk, qk, x, key_padding_mask);
    x = skip + dropout(x);
    if (pre_norm_) {
      skip = x;
      x = norm2_->forward(x);
    } else {
      x = norm1_->forward(x);
      skip = x;
    }
    x = nn::apply_linear(linear2_, dropout(apply_activation(activation_, nn::apply_linear(linear1_, x))));
    x = skip + dropout(x);
    if (!pre_norm_) x = norm2_->forward(x);
    return x;
  });
}

ACTDecoderLayerImpl::ACTDecoderLayerImpl(const ACTConfig& config)
    : dropout_(config.dropout), activation_(config.feedforward_activation), pre_norm_(config.pre_norm) {
  self_attn_ = register_module("self_attn", MultiheadAttention(config.dim_model, config.n_heads, config.dropout));
  multihead_attn_ =
      register_module("multihead_attn", MultiheadAttention(config.dim_model, config.n_heads, config.dropout));
  linear1_ = register_module("linear1", torch::nn::Linear(config.dim_model, config.dim_feedforward));
  linear2_ = register_module("linear2", torch::nn::Linear(config.dim_feedforward, config.dim_model));
  norm1_ = register_module("norm1", layer_norm(config.dim_model));
  norm2_ = register_module("norm2", layer_norm(config.dim_model));
  norm3_ = register_module("norm3", layer_norm(config.dim_model));
}

torch::Tensor ACTDecoderLayerImpl::forward(torch::Tensor x, const torch::Tensor& encoder_out,
                                           const torch::Tensor& decoder_pos_embed,
                                           const torch::Tensor& encoder_pos_embed) {
  return nn::hooked_forward(*this, [&] {
    auto skip = x;
    if (pre_norm_) x = norm1_->forward(x);
    auto qk = with_pos(x, decoder_pos_embed);
    x = self_attn_->forward(qk, qk, x);
    x = skip + dropout(x);
    if (pre_norm_) {
      skip = x;
      x = norm2_->forward(x);
    } else {
      x = norm1_->forward(x);
      skip = x;
    }
    x = multihead_attn_->forward(with_pos(x, decoder_pos_embed), with_pos(encoder_out, encoder_pos_embed), encoder_out);
    x = skip + dropout(x);
    if (pre_norm_) {
      skip = x;
      x = norm3_->forward(x);
    } else {
      x = norm2_->forward(x);
      skip = x;
    }
    x = nn::apply_linear(linear2_, dropout(apply_activation(activation_, nn::apply_linear(linear1_, x))));
    x = skip + dropout(x);
    if (!pre_norm_) x = norm3_->forward(x);
    return x;
  });
}

ACTEncoderImpl::ACTEncoderImpl(const ACTConfig& config, bool is_vae_encoder) {
  const int64_t count = is_vae_encoder ? config.n_vae_encoder_layers : config.n_encoder_layers;
  auto list = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < count; ++i) {
    layers_.emplace_back(config);
    list->push_back(layers_.back());
  }
  if (config.pre_norm) norm_ = register_module("norm", layer_norm(config.dim_model));
}

torch::Tensor ACTEncoderImpl::forward(torch::Tensor x, const torch::Tensor& pos_embed,
                                      const torch::Tensor& key_padding_mask) {
  for (auto& layer : layers_) x = layer->forward(x, pos_embed, key_padding_mask);
  return norm_ ? norm_->forward(x) : x;
}

ACTDecoderImpl::ACTDecoderImpl(const ACTConfig& config) {
  auto list = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.n_decoder_layers; ++i) {
    layers_.emplace_back(config);
    list->push_back(layers_.back());
  }
  norm_ = register_module("norm", layer_norm(config.dim_model));
}

torch::Tensor ACTDecoderImpl::forward(torch::Tensor x, const torch::Tensor& encoder_out,
                                      const torch::Tensor& decoder_pos_embed, const torch::Tensor& encoder_pos_embed) {
  for (auto& layer : layers_) x = layer->forward(x, encoder_out, decoder_pos_embed, encoder_pos_embed);
  return norm_->forward(x);
}

}  // namespace lrhost::policy::act
