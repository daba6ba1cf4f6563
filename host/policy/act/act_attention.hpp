// torch.nn.MultiheadAttention as ACT uses it (sequence-first, packed in_proj_weight/in_proj_bias plus
// out_proj, dropout on the attention weights, optional key padding mask), with PyTorch's parameter
// names, registration order and initialisation so LeRobot's state_dict keys and optimizer indices
// match. The computation follows torch.nn.functional.multi_head_attention_forward on the path ACT
// takes (need_weights=True, separate q/k/v projections because value differs from query/key).
#pragma once
#include <torch/torch.h>

namespace lrhost::policy::act {

class MultiheadAttentionImpl : public torch::nn::Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout);
  // query (Lq, B, E), key/value (Lk, B, E); key_padding_mask (B, Lk) bool, true = ignore that key.
  // Returns the attention output (Lq, B, E) (LeRobot discards the weights).
  torch::Tensor forward(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                        const torch::Tensor& key_padding_mask = {});

  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr};

 private:
  int64_t embed_dim_, num_heads_;
  double dropout_;
};
TORCH_MODULE(MultiheadAttention);

}  // namespace lrhost::policy::act
