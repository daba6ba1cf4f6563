// Matmul FLOP bookkeeping; see training_flops.hpp.
#include "host/policy/training_flops.hpp"

namespace lrhost::policy {

void TrainingFlops::matmul(double m, double k, double n, bool weight_trains, bool input_needs_grad, bool recomputed) {
  const double product = 2 * m * k * n;
  forward_ += product;
  backward_ += (weight_trains ? product : 0) + (input_needs_grad ? product : 0);
  if (recomputed) recompute_ += product;
}

void TrainingFlops::activation_matmul(double m, double k, double n, bool needs_grad, bool recomputed) {
  const double product = 2 * m * k * n;
  forward_ += product;
  if (needs_grad) backward_ += 2 * product;
  if (recomputed) recompute_ += product;
}

}  // namespace lrhost::policy
