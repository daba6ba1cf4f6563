// Gradient-norm clipping; see grad_clip.hpp.
#include "host/optim/grad_clip.hpp"

#include <algorithm>

#include "host/util/error.hpp"

namespace lrhost::optim {

bool foreach_clip_applies(const std::vector<torch::Tensor>& grads) {
  return !grads.empty() && std::all_of(grads.begin(), grads.end(), [&](const torch::Tensor& g) {
    return g.is_cuda() && !g.is_sparse() && g.device() == grads.front().device() &&
           g.scalar_type() == grads.front().scalar_type();
  });
}

torch::Tensor clip_grad_norm_foreach(const std::vector<torch::Tensor>& grads, double max_norm) {
  if (!foreach_clip_applies(grads))
    throw util::ConfigError("clip_grad_norm_foreach: needs dense gradients on one CUDA device in one dtype");
  torch::NoGradGuard no_grad;
  auto total = torch::linalg_vector_norm(torch::stack(at::_foreach_norm(grads, 2)), 2);
  auto coefficient = torch::clamp_max(max_norm / (total + 1e-6), 1.0);
  at::_foreach_mul_(grads, coefficient);
  return total;
}

double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  if (!(max_norm > 0)) throw util::ConfigError("clip_grad_norm: max_norm must be > 0, got " + std::to_string(max_norm));
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (!foreach_clip_applies(grads)) return torch::nn::utils::clip_grad_norm_(params, max_norm);
  return clip_grad_norm_foreach(grads, max_norm).item<double>();
}

}  // namespace lrhost::optim
