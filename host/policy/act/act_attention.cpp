// Multi-head attention with PyTorch's parameter layout and arithmetic.
#include "host/policy/act/act_attention.hpp"

#include <cmath>
#include <limits>

#include "host/nn/dropout.hpp"
#include "host/nn/linear.hpp"

namespace lrhost::policy::act {

MultiheadAttentionImpl::MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout)
    : embed_dim_(embed_dim), num_heads_(num_heads), dropout_(dropout) {
  // PyTorch's order: empty in_proj tensors, then out_proj (its Linear init draws), then
  // _reset_parameters (xavier on in_proj_weight, zero biases), so seeded inits draw alike.
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * embed_dim, embed_dim}));
  in_proj_bias = register_parameter("in_proj_bias", torch::empty({3 * embed_dim}));
  out_proj = register_module("out_proj", torch::nn::Linear(embed_dim, embed_dim));
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  in_proj_bias.zero_();
  out_proj->bias.zero_();
}

torch::Tensor MultiheadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& key_padding_mask) {
  const int64_t target_len = query.size(0), batch = query.size(1), source_len = key.size(0);
  const int64_t head_dim = embed_dim_ / num_heads_;
  auto weights = in_proj_weight.chunk(3);
  auto biases = in_proj_bias.chunk(3);
  // (L, B, E) -> (B * heads, L, head_dim)
  auto heads = [&](const torch::Tensor& x, int64_t len) {
    return x.view({len, batch * num_heads_, head_dim}).transpose(0, 1);
  };
  auto q = heads(torch::linear(query, weights[0], biases[0]), target_len);
  auto k = heads(torch::linear(key, weights[1], biases[1]), source_len);
  auto v = heads(torch::linear(value, weights[2], biases[2]), source_len);

  auto q_scaled = q * std::sqrt(1.0 / static_cast<double>(head_dim));
  torch::Tensor scores;
  if (key_padding_mask.defined()) {
    // PyTorch turns the boolean mask into an additive one (-inf on padded keys) of the query's dtype.
    auto additive = torch::zeros(key_padding_mask.sizes(), query.options())
                        .masked_fill_(key_padding_mask, -std::numeric_limits<double>::infinity());
    additive = additive.view({batch, 1, 1, source_len})
                   .expand({-1, num_heads_, -1, -1})
                   .reshape({batch * num_heads_, 1, source_len});
    scores = torch::baddbmm(additive, q_scaled, k.transpose(-2, -1));
  } else {
    scores = torch::bmm(q_scaled, k.transpose(-2, -1));
  }
  auto attention = torch::softmax(scores, -1);
  if (is_training() && dropout_ > 0.0) attention = nn::dropout(attention, dropout_, true);
  auto out = torch::bmm(attention, v).transpose(0, 1).contiguous().view({target_len * batch, embed_dim_});
  out = nn::apply_linear(out_proj, out);
  return out.view({target_len, batch, out.size(1)});
}

}  // namespace lrhost::policy::act
