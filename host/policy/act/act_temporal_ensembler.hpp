// LeRobot's ACTTemporalEnsembler (Algorithm 2 of the ACT paper): every step the policy predicts a
// whole chunk, and the action executed for a time step is the exponentially weighted average of
// every prediction made for it, w_i = exp(-coeff * i) with i = 0 the oldest, kept as an online
// average so no history of chunks is stored.
#pragma once
#include <torch/torch.h>

namespace lrhost::policy::act {

class ACTTemporalEnsembler {
 public:
  ACTTemporalEnsembler(double temporal_ensemble_coeff, int64_t chunk_size);
  void reset();
  // actions (B, chunk_size, A): folds the new chunk into the running averages and returns the
  // ensembled action (B, A) for the current step, which it then drops.
  torch::Tensor update(const torch::Tensor& actions);

 private:
  int64_t chunk_size_;
  torch::Tensor weights_, weights_cumsum_;  // (chunk_size,)
  torch::Tensor ensembled_actions_;         // (B, n, A): running averages for the next n steps
  torch::Tensor ensembled_count_;           // (n, 1) int64: predictions folded into each
};

}  // namespace lrhost::policy::act
