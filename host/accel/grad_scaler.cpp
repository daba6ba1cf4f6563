// Unscaling, overflow detection and scale updates for fp16 loss scaling.
#include "host/accel/grad_scaler.hpp"

namespace lrhost::accel {

bool GradScaler::unscale(const std::vector<torch::Tensor>& params, dist::Comm& comm) {
  torch::NoGradGuard no_grad;
  bool found_inf = false;
  const double inverse = 1.0 / scale_;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    auto grad = p.mutable_grad();
    grad.mul_(inverse);
    if (!torch::isfinite(grad).all().item<bool>()) found_inf = true;
  }
  // Every rank must skip or take the step together.
  auto flag = torch::full({1}, found_inf ? 1.0 : 0.0);
  if (!params.empty()) flag = flag.to(params.front().device());
  comm.all_reduce(flag, dist::ReduceOp::max);
  return flag.item<double>() > 0.5;
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
