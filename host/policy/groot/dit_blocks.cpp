// The action head's transformer blocks; see dit_blocks.hpp.
#include "host/policy/groot/dit_blocks.hpp"

#include <cmath>

#include "host/nn/activation_checkpoint.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/nn/forward_hooks.hpp"
#include "host/nn/linear.hpp"

namespace lrhost::policy::groot {
namespace F = torch::nn::functional;
using nn::apply_linear;

namespace {

torch::Tensor dropout_if_training(const torch::Tensor& x, double p, bool training) {
  return p > 0 && training ? F::dropout(x, F::DropoutFuncOptions().p(p).training(true)) : x;
}

torch::Tensor plain_layer_norm(const torch::Tensor& x, int64_t dim, double eps) {
  return torch::layer_norm(x, {dim}, {}, {}, eps);
}

}  // namespace

DiffusersAttentionImpl::DiffusersAttentionImpl(int64_t dim, int64_t heads, int64_t head_dim, int64_t cross_dim,
                                               double dropout)
    : heads_(heads), head_dim_(head_dim), dropout_(dropout) {
  const int64_t inner = heads * head_dim, key_dim = cross_dim > 0 ? cross_dim : dim;
  to_q = register_module("to_q", torch::nn::Linear(torch::nn::LinearOptions(dim, inner).bias(true)));
  to_k = register_module("to_k", torch::nn::Linear(torch::nn::LinearOptions(key_dim, inner).bias(true)));
  to_v = register_module("to_v", torch::nn::Linear(torch::nn::LinearOptions(key_dim, inner).bias(true)));
  to_out = register_module("to_out", torch::nn::ModuleList());
  out_proj_ = torch::nn::Linear(torch::nn::LinearOptions(inner, dim).bias(true));
  to_out->push_back(out_proj_);  // "to_out.0" (diffusers' to_out.1 is the dropout)
}

torch::Tensor DiffusersAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& context,
                                              const torch::Tensor& key_mask) {
  const auto& source = context.defined() ? context : x;
  const int64_t batch = x.size(0);
  auto split = [&](const torch::Tensor& t) { return t.view({batch, -1, heads_, head_dim_}).transpose(1, 2); };
  const auto q = split(apply_linear(to_q, x));
  const auto k = split(apply_linear(to_k, source));
  const auto v = split(apply_linear(to_v, source));
  std::optional<torch::Tensor> mask;
  // diffusers: (B, S) repeated per head, viewed (B, heads, 1, S).
  if (key_mask.defined()) mask = key_mask.to(torch::kBool).unsqueeze(1).unsqueeze(1).expand({batch, heads_, 1, -1});
  auto out = at::scaled_dot_product_attention(q, k, v, mask, 0.0, false);
  out = out.transpose(1, 2).reshape({batch, -1, heads_ * head_dim_});
  out = apply_linear(out_proj_, out);
  return dropout_if_training(out, dropout_, is_training());
}

GeluProjectionImpl::GeluProjectionImpl(int64_t in, int64_t out)
    : proj(register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(true)))) {}

torch::Tensor GeluProjectionImpl::forward(const torch::Tensor& x) {
  return F::gelu(apply_linear(proj, x), F::GELUFuncOptions().approximate("tanh"));
}

FeedForwardImpl::FeedForwardImpl(int64_t dim, double dropout, bool final_dropout)
    : dropout_(dropout), final_dropout_(final_dropout) {
  net = register_module("net", torch::nn::ModuleList());
  in_proj_ = GeluProjection(dim, 4 * dim);
  net->push_back(in_proj_);
  net->push_back(torch::nn::Dropout(dropout));
  out_proj_ = torch::nn::Linear(torch::nn::LinearOptions(4 * dim, dim).bias(true));
  net->push_back(out_proj_);
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  auto h = in_proj_(x);
  h = dropout_if_training(h, dropout_, is_training());
  h = apply_linear(out_proj_, h);
  return final_dropout_ ? dropout_if_training(h, dropout_, is_training()) : h;
}

AdaLayerNormImpl::AdaLayerNormImpl(int64_t dim)
    : linear(register_module("linear", torch::nn::Linear(torch::nn::LinearOptions(dim, 2 * dim).bias(true)))),
      dim_(dim) {}

torch::Tensor AdaLayerNormImpl::forward(const torch::Tensor& x, const torch::Tensor& temb) {
  const auto chunks = apply_linear(linear, torch::silu(temb)).chunk(2, 1);
  const auto& scale = chunks[0];
  const auto& shift = chunks[1];
  return plain_layer_norm(x, dim_, 1e-5) * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1);
}

BasicTransformerBlockImpl::BasicTransformerBlockImpl(const TransformerStackConfig& stack, int64_t cross_dim,
                                                     bool ada_norm)
    : ada_norm_(ada_norm), dim_(stack.inner_dim()), dropout_(stack.dropout), final_dropout_(stack.final_dropout) {
  if (ada_norm)
    ada_norm1 = register_module("norm1", AdaLayerNorm(dim_));
  else
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim_}).eps(1e-5)));
  attn1 = register_module(
      "attn1", DiffusersAttention(dim_, stack.num_attention_heads, stack.attention_head_dim, cross_dim, stack.dropout));
  if (!ada_norm) norm3 = register_module("norm3", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim_}).eps(1e-5)));
  ff = register_module("ff", FeedForward(dim_, stack.dropout, stack.final_dropout));
}

torch::Tensor BasicTransformerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& context,
                                                 const torch::Tensor& key_mask, const torch::Tensor& temb) {
  const auto normed = ada_norm_ ? ada_norm1(x, temb) : norm1(x);
  auto attention = attn1(normed, context, key_mask);
  if (final_dropout_) attention = dropout_if_training(attention, dropout_, is_training());
  const auto h = attention + x;
  const auto normed3 = ada_norm_ ? plain_layer_norm(h, dim_, 1e-5) : norm3(h);
  return ff(normed3) + h;
}

torch::Tensor dit_timestep_projection(const torch::Tensor& timesteps, int64_t channels) {
  const int64_t half = channels / 2;
  auto exponent = torch::arange(0, half, timesteps.options().dtype(torch::kFloat)) * (-std::log(10000.0));
  exponent = exponent / (half - 1);  // downscale_freq_shift = 1
  auto emb = timesteps.unsqueeze(1).to(torch::kFloat) * torch::exp(exponent).unsqueeze(0);
  emb = torch::cat({torch::sin(emb), torch::cos(emb)}, -1);
  return torch::cat({emb.narrow(1, half, half), emb.narrow(1, 0, half)}, -1);  // flip_sin_to_cos
}

TimestepEmbeddingImpl::TimestepEmbeddingImpl(int64_t in, int64_t dim)
    : linear_1(register_module("linear_1", torch::nn::Linear(torch::nn::LinearOptions(in, dim).bias(true)))),
      linear_2(register_module("linear_2", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)))) {}

torch::Tensor TimestepEmbeddingImpl::forward(const torch::Tensor& x) {
  return apply_linear(linear_2, torch::silu(apply_linear(linear_1, x)));
}

TimestepEncoderImpl::TimestepEncoderImpl(int64_t dim)
    : timestep_embedder(register_module("timestep_embedder", TimestepEmbedding(256, dim))) {}

torch::Tensor TimestepEncoderImpl::forward(const torch::Tensor& timesteps) {
  const auto dtype = timestep_embedder->linear_1->weight.scalar_type();
  return timestep_embedder(dit_timestep_projection(timesteps).to(dtype));
}

AlternateVLDiTImpl::AlternateVLDiTImpl(const TransformerStackConfig& stack, int64_t cross_dim,
                                       int64_t attend_text_every_n_blocks)
    : inner_dim_(stack.inner_dim()), attend_text_every_n_blocks_(attend_text_every_n_blocks) {
  timestep_encoder = register_module("timestep_encoder", TimestepEncoder(inner_dim_));
  transformer_blocks = register_module("transformer_blocks", torch::nn::ModuleList());
  for (int64_t idx = 0; idx < stack.num_layers; ++idx) {  // odd blocks self-attend (interleave_self_attention)
    BasicTransformerBlock block(stack, idx % 2 == 1 ? 0 : cross_dim, /*ada_norm=*/true);
    nn::release_parameters(*block);  // nn/deferred_init.hpp: one block at a time
    transformer_blocks->push_back(block);
  }
  proj_out_1 = register_module("proj_out_1", torch::nn::Linear(torch::nn::LinearOptions(inner_dim_, 2 * inner_dim_)));
  proj_out_2 = register_module("proj_out_2", torch::nn::Linear(torch::nn::LinearOptions(inner_dim_, stack.output_dim)));
}

namespace {

[[maybe_unused]] const bool kBasicTransformerBlockHookable = nn::register_hookable_module_type("BasicTransformerBlock");

// One block between its hooks (FSDP gathers a block that is a unit), checkpointed when asked (its
// dropout masks are replayed by the recompute: checkpoint saves the generators' state).
torch::Tensor run_block(const std::shared_ptr<BasicTransformerBlockImpl>& block, const torch::Tensor& x,
                        const torch::Tensor& context, const torch::Tensor& key_mask, const torch::Tensor& temb,
                        bool checkpointed) {
  auto run = [&]() -> torch::Tensor {
    if (!checkpointed) return block->forward(x, context, key_mask, temb);
    auto body = [block](const std::vector<torch::Tensor>& in) {
      return std::vector<torch::Tensor>{block->forward(in[0], in[1], in[2], in[3])};
    };
    return nn::checkpoint(body, {x, context, key_mask, temb}, nn::trainable_parameters({block.get()}))[0];
  };
  return nn::hooked_forward(*block, {x}, run);
}

}  // namespace

torch::Tensor AlternateVLDiTImpl::forward(const torch::Tensor& x, const torch::Tensor& vl,
                                          const torch::Tensor& timestep, const torch::Tensor& image_mask,
                                          const torch::Tensor& attention_mask) {
  const auto temb = timestep_encoder(timestep);
  const auto image = image_mask.to(torch::kBool), valid = attention_mask.to(torch::kBool);
  const auto image_keys = image & valid, text_keys = image.logical_not() & valid;
  auto h = x.contiguous();
  const auto context = vl.contiguous();
  const bool checkpointed = gradient_checkpointing && torch::GradMode::is_enabled();
  for (std::size_t idx = 0; idx < transformer_blocks->size(); ++idx) {
    auto block = transformer_blocks->ptr<BasicTransformerBlockImpl>(idx);
    if (idx % 2 == 1) {
      h = run_block(block, h, {}, {}, temb, checkpointed);
    } else {
      const bool text = idx % static_cast<std::size_t>(2 * attend_text_every_n_blocks_) == 0;
      h = run_block(block, h, context, text ? text_keys : image_keys, temb, checkpointed);
    }
  }
  const auto chunks = apply_linear(proj_out_1, torch::silu(temb)).chunk(2, 1);
  const auto& shift = chunks[0];  // shift first here (AdaLayerNorm has scale first)
  const auto& scale = chunks[1];
  h = plain_layer_norm(h, inner_dim_, 1e-6) * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1);
  return apply_linear(proj_out_2, h);
}

SelfAttentionTransformerImpl::SelfAttentionTransformerImpl(const TransformerStackConfig& stack) {
  transformer_blocks = register_module("transformer_blocks", torch::nn::ModuleList());
  for (int64_t idx = 0; idx < stack.num_layers; ++idx) {
    BasicTransformerBlock block(stack, 0, /*ada_norm=*/false);
    nn::release_parameters(*block);
    transformer_blocks->push_back(block);
  }
}

torch::Tensor SelfAttentionTransformerImpl::forward(const torch::Tensor& x) {
  auto h = x.contiguous();
  const bool checkpointed = gradient_checkpointing && torch::GradMode::is_enabled();
  for (std::size_t idx = 0; idx < transformer_blocks->size(); ++idx)
    h = run_block(transformer_blocks->ptr<BasicTransformerBlockImpl>(idx), h, {}, {}, {}, checkpointed);
  return h;
}

}  // namespace lrhost::policy::groot
