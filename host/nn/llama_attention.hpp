// transformers' LlamaAttention: q/k/v/o projections (module names q_proj, k_proj, v_proj, o_proj,
// biases per config.attention_bias) around RoPE and the attention core. The projections and the
// core are also reachable one by one, because SmolVLA runs them itself: it projects two streams,
// concatenates them, applies its own RoPE and mask, and only then attends (smolvlm_with_expert.py).
#pragma once
#include <torch/torch.h>

#include "host/nn/attention_core.hpp"
#include "host/nn/llama_config.hpp"
#include "host/nn/rotary_embedding.hpp"

namespace lrhost::nn {

struct QueryKeyValue {
  torch::Tensor query;  // (B, L, heads, head_dim)
  torch::Tensor key;    // (B, L, kv_heads, head_dim)
  torch::Tensor value;  // (B, L, kv_heads, head_dim)
};

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  // `kv_input_size` is the width k_proj/v_proj read (0 = hidden_size). SmolVLA's cross-attention
  // expert layers use kv_heads·head_dim here: their k/v project the VLM layer's keys and values.
  explicit LlamaAttentionImpl(const LlamaConfig& config, int64_t kv_input_size = 0);

  // x (B, L, hidden) -> (B, L, heads, head_dim) and twice (B, L, kv_heads, head_dim).
  QueryKeyValue project(const torch::Tensor& x);
  torch::Tensor project_query(const torch::Tensor& x);
  torch::Tensor project_key(const torch::Tensor& x);
  torch::Tensor project_value(const torch::Tensor& x);
  // (B, L, heads·head_dim) -> (B, L, hidden)
  torch::Tensor project_output(const torch::Tensor& attended);

  // LlamaAttention.forward: project, RoPE on q and k (transformers' arithmetic), attend, o_proj.
  torch::Tensor forward(const torch::Tensor& x, const RotaryTables& rope, const torch::Tensor& mask = {},
                        const AttentionOptions& options = {});

  int64_t num_heads() const { return num_heads_; }
  int64_t num_kv_heads() const { return num_kv_heads_; }
  int64_t head_dim() const { return head_dim_; }

  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  torch::Tensor split_heads(const torch::Tensor& x) const;
  int64_t num_heads_, num_kv_heads_, head_dim_;
};
TORCH_MODULE(LlamaAttention);

}  // namespace lrhost::nn
