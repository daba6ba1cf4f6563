// The attention computation between projected heads (no projections, no RoPE): softmax(q·kᵀ·scale
// + mask)·v with grouped-query heads, in three arithmetic variants that callers choose by the model
// they must match bit for bit:
//  - sdpa: at::scaled_dot_product_attention exactly as transformers' "sdpa" backend calls it (kv
//    heads repeated when a mask is given, enable_gqa + is_causal without one). A query row whose keys
//    are all masked gives 0 (PyTorch's safe softmax).
//  - eager: transformers' eager_attention_forward (scores in the activation dtype, additive mask,
//    softmax in fp32 cast back, probs·v). A boolean mask becomes 0 / finfo.min of the query dtype, as
//    transformers builds it for eager.
//  - eager_fp32_scores: Q and K cast to fp32, scores·scale in fp32, masked with finfo(float32).min
//    (not −inf, so a fully masked row gets a uniform softmax instead of NaN), softmax fp32, probs cast
//    to V's dtype, probs·v. Boolean masks only. This is LeRobot SmolVLA's eager_attention_forward
//    (smolvlm_with_expert.py).
// In fp32 with no fully masked row the three agree to ~1e-6 (different kernels); they are not
// interchangeable on fully masked rows (0 vs uniform) nor in bf16 (score dtype differs).
#pragma once
#include <torch/torch.h>

#include <optional>

namespace lrhost::nn {

enum class AttentionKernel { sdpa, eager, eager_fp32_scores };

struct AttentionOptions {
  AttentionKernel kernel = AttentionKernel::sdpa;
  // Without a mask: query i attends to keys 0..i (transformers' is_causal, only when Lq > 1).
  // Ignored when a mask is given (the mask then says everything, as in transformers).
  bool causal = false;
  std::optional<double> scale;  // default head_dim^-0.5
};

// query (B, Lq, H, D); key and value (B, Lk, Hkv, D) with H a multiple of Hkv: query head h uses
// kv head h / (H / Hkv). mask: undefined, boolean (true = may attend) or additive floating point
// (sdpa and eager only), shaped (B or 1, Lq, Lk) or (B or 1, 1 or H, Lq, Lk).
// Returns (B, Lq, H·D) in value's dtype (query's for sdpa/eager, which require equal dtypes).
torch::Tensor attend(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                     const torch::Tensor& mask, const AttentionOptions& options = {});

const char* attention_kernel_name(AttentionKernel kernel);

}  // namespace lrhost::nn
