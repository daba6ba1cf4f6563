// Split-half rotary position embedding (RoPE) in the two arithmetic variants a VLA port needs:
//  - transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb ("default" rope type): inverse
//    frequencies 1/base^(2i/d), angles = inv_freq·pos in fp32, cos/sin cast to the activation dtype,
//    and the rotation x·cos + rotate_half(x)·sin done in that dtype (bf16 rotates in bf16);
//  - apply_rope_fp32: angles = pos / base^((2/d)·i) in fp32, and the rotation done in fp32 on an
//    fp32 copy of x, cast back at the end (LeRobot SmolVLA's apply_rope, smolvlm_with_expert.py).
// In fp32 the two differ only by the rounding of the angles (multiply by a reciprocal vs divide), a
// few ulp of the angle; in bf16 they differ by the rotation's dtype. Each caller uses its own.
// Positions are (B, L) integer ids, arbitrary per batch row (padding repeats, gaps, offsets).
#pragma once
#include <torch/torch.h>

namespace lrhost::nn {

// cos and sin of transformers' default RoPE, each (B, L, head_dim) in the requested dtype.
struct RotaryTables {
  torch::Tensor cos, sin;
};

// Not a torch::nn::Module on purpose: transformers registers inv_freq as a non-persistent buffer, so
// it is in no weight file, and strict weight loading must not expect it.
class LlamaRotaryEmbedding {
 public:
  LlamaRotaryEmbedding(int64_t head_dim, double base);
  // position_ids (B, L) integer; the tables are built in fp32 on position_ids' device and cast to `dtype`.
  RotaryTables tables(const torch::Tensor& position_ids, c10::ScalarType dtype) const;
  const torch::Tensor& inv_freq() const { return inv_freq_; }  // (head_dim / 2) fp32, CPU

  // Rounds the inverse frequencies through `dtype` (they stay fp32 afterwards), as transformers'
  // `model.to(torch.bfloat16)` does to its inv_freq buffer. A model loaded with
  // from_pretrained(dtype=bf16) keeps fp32 inverse frequencies: leave them alone for that case.
  void round_inv_freq_through(c10::ScalarType dtype);

 private:
  torch::Tensor inv_freq_;
};

// transformers' apply_rotary_pos_emb on one tensor. x is (B, L, H, D) when heads_dim == 2 (lrhost's
// layout) or (B, H, L, D) when heads_dim == 1 (transformers' layout); cos/sin are (B, L, D).
torch::Tensor apply_rotary_pos_emb(const torch::Tensor& x, const RotaryTables& tables, int64_t heads_dim = 2);

// Split-half RoPE computed and applied in fp32 (angles by division): x (B, L, H, D), positions
// (B, L); returns x's dtype. `base` is the max wavelength (LeRobot SmolVLA hard-codes 10,000,
// whatever the checkpoint's rope_theta says).
torch::Tensor apply_rope_fp32(const torch::Tensor& x, const torch::Tensor& positions, double base = 10000.0);

}  // namespace lrhost::nn
