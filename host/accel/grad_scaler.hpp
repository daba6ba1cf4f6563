// Dynamic loss scaling for fp16 training (the GradScaler algorithm): the loss is multiplied by
// `scale` before backward so small fp16 gradients do not flush to zero; before the optimizer step
// the gradients are unscaled and checked, a step with non-finite gradients is skipped and the
// scale halved, and after `growth_interval` clean steps the scale doubles.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "host/dist/comm.hpp"

namespace lrhost::accel {

class GradScaler {
 public:
  torch::Tensor scale_loss(const torch::Tensor& loss) const { return loss * scale_; }
  // Divides every gradient by the scale; returns whether any is inf/NaN on any rank.
  bool unscale(const std::vector<torch::Tensor>& params, dist::Comm& comm);
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
