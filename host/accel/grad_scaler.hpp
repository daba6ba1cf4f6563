// Dynamic loss scaling for fp16 training (the GradScaler algorithm): the loss is multiplied by
// `scale` before backward so small fp16 gradients do not flush to zero; before the optimizer step
// the gradients are unscaled and checked, a step with non-finite gradients is skipped and the
// scale halved, and after `growth_interval` clean steps the scale doubles. Such a skip is normal
// fp16 training; a non-finite loss is not (the scale plays no part in the forward pass), so the
// accelerator's divergence guard folds its loss flag into the same all-reduce and treats it apart.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "host/dist/comm.hpp"

namespace lrhost::accel {

class GradScaler {
 public:
  torch::Tensor scale_loss(const torch::Tensor& loss) const { return loss * scale_; }
  enum class Check { clean, overflow, loss_not_finite };
  // Divides every gradient by the scale; returns, agreed by every rank in one all-reduce, whether
  // some rank's `loss_not_finite` flag (a one-element tensor, 1 or 0; may be undefined) is set,
  // else whether any gradient is inf/NaN on any rank.
  Check unscale(const std::vector<torch::Tensor>& params, dist::Comm& comm, const torch::Tensor& loss_not_finite = {});
  // Records the outcome of one optimizer step and adapts the scale.
  void update(bool found_inf);

  double scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_steps_; }

 private:
  double scale_ = 65536.0;
  double growth_factor_ = 2.0;
  double backoff_factor_ = 0.5;
  int64_t growth_interval_ = 2000;
  int64_t clean_steps_ = 0;
  int64_t skipped_steps_ = 0;
};

}  // namespace lrhost::accel
