// Multi-head self-attention of a SigLIP encoder layer (transformers 5.5 SmolVLMVisionAttention /
// SiglipAttention): separate q/k/v/out projections with biases, registered in transformers' order
// (k_proj, v_proj, q_proj, out_proj) so named_parameters() lists them as the checkpoint's model does;
// scale head_dim^-0.5, no mask, no causality. q, k and v are computed by one GEMM over the three
// weights concatenated (faster on CPU; equal to three projections up to fp32 summation order). The
// attention itself is at::scaled_dot_product_attention, the kernel transformers' default "sdpa" backend
// calls with the same arguments.
#pragma once
#include <torch/torch.h>

#include "host/nn/siglip_config.hpp"

namespace lrhost::nn {

class SiglipAttentionImpl : public torch::nn::Module {
 public:
  explicit SiglipAttentionImpl(const SiglipVisionConfig& config);
  // (B, L, hidden) -> (B, L, hidden). Dropout on the attention weights only in training mode.
  torch::Tensor forward(const torch::Tensor& hidden_states);

  torch::nn::Linear k_proj{nullptr}, v_proj{nullptr}, q_proj{nullptr}, out_proj{nullptr};

 private:
  int64_t num_heads_, head_dim_;
  double scale_, dropout_;
};
TORCH_MODULE(SiglipAttention);

}  // namespace lrhost::nn
