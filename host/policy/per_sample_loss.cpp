// Per-sample loss means; see per_sample_loss.hpp.
#include "host/policy/per_sample_loss.hpp"

#include <torch/torch.h>

namespace lrhost::policy {

torch::Tensor per_sample_mean(const torch::Tensor& elements, const torch::Tensor& weights) {
  torch::NoGradGuard no_grad;
  const auto flat = elements.detach().flatten(1);
  if (!weights.defined()) return flat.mean(1);
  const auto w = weights.to(elements.dtype()).expand_as(elements).flatten(1);
  return (flat * w).sum(1) / w.sum(1).clamp_min(1);
}

}  // namespace lrhost::policy
