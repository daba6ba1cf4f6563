// Online temporal ensembling of action chunks, as LeRobot computes it.
#include "host/policy/act/act_temporal_ensembler.hpp"

namespace lrhost::policy::act {

using torch::indexing::None;
using torch::indexing::Slice;

ACTTemporalEnsembler::ACTTemporalEnsembler(double temporal_ensemble_coeff, int64_t chunk_size)
    : chunk_size_(chunk_size) {
  // arange is int64 and the product float32, as in LeRobot.
  weights_ = torch::exp(-temporal_ensemble_coeff * torch::arange(chunk_size));
  weights_cumsum_ = torch::cumsum(weights_, 0);
  reset();
}

void ACTTemporalEnsembler::reset() {
  ensembled_actions_ = torch::Tensor();
  ensembled_count_ = torch::Tensor();
}

torch::Tensor ACTTemporalEnsembler::update(const torch::Tensor& actions) {
  weights_ = weights_.to(actions.device());
  weights_cumsum_ = weights_cumsum_.to(actions.device());
  if (!ensembled_actions_.defined()) {
    // First step of the episode: the chunk itself is the average.
    ensembled_actions_ = actions.clone();
    ensembled_count_ =
        torch::ones({chunk_size_, 1}, torch::TensorOptions().dtype(torch::kLong).device(actions.device()));
  } else {
    // Re-weight the running averages of the next chunk_size - 1 steps with the new predictions.
    ensembled_actions_ = ensembled_actions_ * weights_cumsum_.index({ensembled_count_ - 1});
    ensembled_actions_ =
        ensembled_actions_ + actions.index({Slice(), Slice(None, -1)}) * weights_.index({ensembled_count_});
    ensembled_actions_ = ensembled_actions_ / weights_cumsum_.index({ensembled_count_});
    ensembled_count_ = torch::clamp(ensembled_count_ + 1, c10::nullopt, chunk_size_);
    // The last step of the new chunk has no earlier prediction.
    ensembled_actions_ = torch::cat({ensembled_actions_, actions.index({Slice(), Slice(-1, None)})}, 1);
    ensembled_count_ = torch::cat({ensembled_count_, torch::ones_like(ensembled_count_.index({Slice(-1, None)}))});
  }
  auto action = ensembled_actions_.index({Slice(), 0});
  ensembled_actions_ = ensembled_actions_.index({Slice(), Slice(1, None)});
  ensembled_count_ = ensembled_count_.index({Slice(1, None)});
  return action;
}

}  // namespace lrhost::policy::act
