// A policy's training FLOPs, counted the way MFU figures count them (PaLM's appendix B, torchtitan's
// per-token FLOPs): 2 FLOPs per multiply-add of every matmul and convolution of one sample's forward;
// in backward, the same again for an operand's gradient wherever one is needed (the input's when it
// requires grad, the weight's when it trains); a segment recomputed under activation checkpointing
// adds its forward once more. Norms, activations, softmax and other elementwise work are left out:
// they are a few percent at most at the sizes MFU matters for, and the device's peak is a matmul peak.
// The policy states its own dataflow (Policy::training_flops_per_sample), from its geometry and config.
#pragma once

namespace lrhost::policy {

class TrainingFlops {
 public:
  // y = x·W for x of (m, k) and W of (k, n).
  void matmul(double m, double k, double n, bool weight_trains, bool input_needs_grad, bool recomputed = false);
  // y = a·b for two activations a (m, k), b (k, n) (attention's scores and values): both gradients
  // when the product needs one.
  void activation_matmul(double m, double k, double n, bool needs_grad, bool recomputed = false);

  double forward() const { return forward_; }
  double backward() const { return backward_; }
  double recompute() const { return recompute_; }
  double total() const { return forward_ + backward_ + recompute_; }

 private:
  double forward_ = 0, backward_ = 0, recompute_ = 0;
};

}  // namespace lrhost::policy
