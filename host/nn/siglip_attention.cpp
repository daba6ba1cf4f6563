// SigLIP self-attention (see siglip_attention.hpp), with q/k/v computed by one fused GEMM.
#include "host/nn/siglip_attention.hpp"

#include <cmath>

#include "host/nn/linear.hpp"

namespace lrhost::nn {

SiglipAttentionImpl::SiglipAttentionImpl(const SiglipVisionConfig& config)
    : num_heads_(config.num_attention_heads),
      head_dim_(config.head_dim()),
      scale_(std::pow(static_cast<double>(config.head_dim()), -0.5)),
      dropout_(config.attention_dropout) {
  const int64_t dim = config.hidden_size;
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
}

torch::Tensor SiglipAttentionImpl::forward(const torch::Tensor& hidden_states) {
  const int64_t batch = hidden_states.size(0), length = hidden_states.size(1);
  // One GEMM for q, k and v (on CPU about 25% faster than three narrow ones); the concatenation is
  // part of the autograd graph, so gradients still reach the three separate parameters. The
  // (B, L, 3, heads, head_dim) result is split into the strided (B, heads, L, head_dim) views SDPA takes,
  // as transformers' `.view(...).transpose(1, 2)`.
  const auto weight = torch::cat({q_proj->weight, k_proj->weight, v_proj->weight});
  const auto bias = torch::cat({q_proj->bias, k_proj->bias, v_proj->bias});
  const auto qkv = torch::linear(hidden_states, weight, bias).view({batch, length, 3, num_heads_, head_dim_});
  const auto q = qkv.select(2, 0).transpose(1, 2);
  const auto k = qkv.select(2, 1).transpose(1, 2);
  const auto v = qkv.select(2, 2).transpose(1, 2);
  auto out = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, is_training() ? dropout_ : 0.0,
                                              /*is_causal=*/false, scale_);
  out = out.transpose(1, 2).contiguous().view({batch, length, num_heads_ * head_dim_});
  return apply_linear(out_proj, out);
}

}  // namespace lrhost::nn
