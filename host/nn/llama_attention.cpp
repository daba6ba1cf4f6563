// LlamaAttention: projections, RoPE and the attention core.
#include "host/nn/llama_attention.hpp"

#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

namespace {
torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}
}  // namespace

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig& config, int64_t kv_input_size)
    : num_heads_(config.num_attention_heads), num_kv_heads_(config.num_key_value_heads), head_dim_(config.head_dim) {
  config.validate("LlamaAttention");
  const int64_t kv_in = kv_input_size > 0 ? kv_input_size : config.hidden_size;
  // Registration order = transformers' (q, k, v, o), so named_parameters() and optimizer indices match.
  q_proj = register_module("q_proj", linear(config.hidden_size, num_heads_ * head_dim_, config.attention_bias));
  k_proj = register_module("k_proj", linear(kv_in, num_kv_heads_ * head_dim_, config.attention_bias));
  v_proj = register_module("v_proj", linear(kv_in, num_kv_heads_ * head_dim_, config.attention_bias));
  o_proj = register_module("o_proj", linear(num_heads_ * head_dim_, config.hidden_size, config.attention_bias));
}

torch::Tensor LlamaAttentionImpl::split_heads(const torch::Tensor& x) const {
  auto shape = x.sizes().vec();
  shape.back() = -1;
  shape.push_back(head_dim_);
  return x.view(shape);
}

torch::Tensor LlamaAttentionImpl::project_query(const torch::Tensor& x) {
  return split_heads(apply_linear(q_proj, x));
}
torch::Tensor LlamaAttentionImpl::project_key(const torch::Tensor& x) {
  return split_heads(apply_linear(k_proj, x));
}
torch::Tensor LlamaAttentionImpl::project_value(const torch::Tensor& x) {
  return split_heads(apply_linear(v_proj, x));
}

QueryKeyValue LlamaAttentionImpl::project(const torch::Tensor& x) {
  return {project_query(x), project_key(x), project_value(x)};
}

torch::Tensor LlamaAttentionImpl::project_output(const torch::Tensor& attended) {
  return apply_linear(o_proj, attended);
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const RotaryTables& rope, const torch::Tensor& mask,
                                          const AttentionOptions& options) {
  if (x.dim() != 3)
    throw util::DataError("LlamaAttention: input must be (batch, length, hidden), got " + c10::str(x.sizes()));
  auto qkv = project(x);
  auto query = apply_rotary_pos_emb(qkv.query, rope);
  auto key = apply_rotary_pos_emb(qkv.key, rope);
  return project_output(attend(query, key, qkv.value, mask, options));
}

}  // namespace lrhost::nn
