// Gemma's RMSNorm and LeRobot's adaptive variant (PiGemmaRMSNorm, lerobot/policies/pi_gemma.py), in
// their cast order: statistics and the normalised value in fp32 whatever the input dtype,
// x·rsqrt(mean(x²) + eps), then
//  - plain:    (x̂ · (1 + w)) with w in fp32, cast back to the input dtype (weight starts at 0, so
//              the stored weight is an offset from 1: the reason a Llama RMSNorm cannot load it);
//  - adaptive: [scale | shift | gate] = dense(cond) (that order, each `dim` wide, one row per batch
//              element broadcast over tokens), x̂·(1 + scale) + shift cast back to the input dtype,
//              and the gate cast to the input dtype for the caller's gated residual x + y·gate.
// The module has either `weight` or `dense.{weight,bias}`, as LeRobot's state dict does.
#pragma once
#include <torch/torch.h>

namespace lrhost::nn {

struct GemmaNormOutput {
  torch::Tensor hidden;  // normalised input, input dtype
  torch::Tensor gate;    // adaptive only: (B, 1, dim) for 3-D input, else (B, dim); undefined when plain
};

class GemmaRMSNormImpl : public torch::nn::Module {
 public:
  // cond_dim 0 = plain norm with a `weight`; > 0 = adaptive norm with `dense` (cond_dim -> 3·dim).
  GemmaRMSNormImpl(int64_t dim, double eps, int64_t cond_dim = 0);

  // Plain norm; an adaptive norm needs its condition and throws here.
  torch::Tensor forward(const torch::Tensor& x);
  // Either kind: a plain norm ignores `cond` (LeRobot passes none to it); an adaptive one requires
  // cond (B, cond_dim).
  GemmaNormOutput forward_with_gate(const torch::Tensor& x, const torch::Tensor& cond);

  bool adaptive() const { return cond_dim_ > 0; }
  int64_t dim() const { return dim_; }

  torch::Tensor weight;              // plain: zeros at construction (= identity scale)
  torch::nn::Linear dense{nullptr};  // adaptive: zeros weight at construction, default bias init

 private:
  torch::Tensor normalized(const torch::Tensor& x) const;
  int64_t dim_, cond_dim_;
  double eps_;
};
TORCH_MODULE(GemmaRMSNorm);

// x + y·gate, or x + y without a gate (LeRobot's _gated_residual).
torch::Tensor gated_residual(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& gate);

}  // namespace lrhost::nn
