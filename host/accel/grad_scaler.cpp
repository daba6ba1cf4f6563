// Unscaling, overflow detection and scale updates for fp16 loss scaling.
#include "host/accel/grad_scaler.hpp"

namespace lrhost::accel {

GradScaler::Check GradScaler::unscale(const std::vector<torch::Tensor>& params, dist::Comm& comm,
                                      const torch::Tensor& loss_not_finite) {
  torch::NoGradGuard no_grad;
  bool found_inf = false;
  const double inverse = 1.0 / scale_;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    auto grad = p.mutable_grad();
    grad.mul_(inverse);
    if (!torch::isfinite(grad).all().item<bool>()) found_inf = true;
  }
  // Every rank must skip or take the step together: 0 clean, 1 overflow, 2 a non-finite loss
  // somewhere (MAX gives the loss precedence).
  auto flag = torch::full({1}, found_inf ? 1.0 : 0.0, torch::kFloat64);
  if (!params.empty()) flag = flag.to(params.front().device());
  if (loss_not_finite.defined()) flag = torch::maximum(flag, loss_not_finite.to(flag.device(), torch::kFloat64) * 2);
  comm.all_reduce(flag, dist::ReduceOp::max);
  double verdict = flag.item<double>();
  return verdict > 1.5 ? Check::loss_not_finite : verdict > 0.5 ? Check::overflow : Check::clean;
}

void GradScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ *= backoff_factor_;
    clean_steps_ = 0;
    ++skipped_steps_;
    return;
  }
  if (++clean_steps_ == growth_interval_) {
    scale_ *= growth_factor_;
    clean_steps_ = 0;
  }
}

}  // namespace lrhost::accel
