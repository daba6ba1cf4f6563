// Gemma RMSNorm (1 + w) and LeRobot's adaptive RMSNorm with gate.
#include "host/nn/gemma_rms_norm.hpp"

#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

GemmaRMSNormImpl::GemmaRMSNormImpl(int64_t dim, double eps, int64_t cond_dim)
    : dim_(dim), cond_dim_(cond_dim), eps_(eps) {
  if (dim <= 0 || cond_dim < 0 || !(eps > 0))
    throw util::ConfigError("GemmaRMSNorm: dim must be positive, cond_dim >= 0 and eps > 0, got dim " +
                            std::to_string(dim) + ", cond_dim " + std::to_string(cond_dim) + ", eps " +
                            std::to_string(eps));
  if (cond_dim > 0) {
    dense = register_module("dense", torch::nn::Linear(torch::nn::LinearOptions(cond_dim, 3 * dim).bias(true)));
    torch::NoGradGuard no_grad;
    dense->weight.zero_();  // as LeRobot: the modulation starts as scale = shift = gate = bias
  } else {
    weight = register_parameter("weight", torch::zeros({dim}));
  }
}

torch::Tensor GemmaRMSNormImpl::normalized(const torch::Tensor& x) const {
  if (x.dim() < 1 || x.size(-1) != dim_)
    throw util::DataError("GemmaRMSNorm: input of shape " + c10::str(x.sizes()) + " does not end in the norm's width " +
                          std::to_string(dim_));
  // PiGemmaRMSNorm._norm: mean of square(x.float()), then x·rsqrt(...) which promotes x to fp32.
  const auto xf = x.to(torch::kFloat32);
  const auto variance = torch::mean(torch::square(xf), -1, /*keepdim=*/true);
  return xf * torch::rsqrt(variance + eps_);
}

torch::Tensor GemmaRMSNormImpl::forward(const torch::Tensor& x) {
  if (adaptive())
    throw util::DataError("GemmaRMSNorm: this norm is adaptive (cond_dim " + std::to_string(cond_dim_) +
                          ") and needs its condition");
  return (normalized(x) * (1.0 + weight.to(torch::kFloat32))).to(x.scalar_type());
}

GemmaNormOutput GemmaRMSNormImpl::forward_with_gate(const torch::Tensor& x, const torch::Tensor& cond) {
  if (!adaptive()) return {forward(x), {}};
  if (!cond.defined() || cond.dim() != 2 || cond.size(-1) != cond_dim_ || cond.size(0) != x.size(0))
    throw util::DataError("GemmaRMSNorm: the condition must be (batch " + std::to_string(x.size(0)) + ", " +
                          std::to_string(cond_dim_) + "), got " +
                          (cond.defined() ? c10::str(cond.sizes()) : std::string("none")));
  auto modulation = apply_linear(dense, cond);
  if (x.dim() == 3) modulation = modulation.unsqueeze(1);
  const auto parts = modulation.chunk(3, -1);
  const auto& scale = parts[0];
  const auto& shift = parts[1];
  const auto& gate = parts[2];
  const auto dtype = x.scalar_type();
  auto hidden = normalized(x) * (1 + scale.to(torch::kFloat32)) + shift.to(torch::kFloat32);
  return {hidden.to(dtype), gate.to(dtype)};
}

torch::Tensor gated_residual(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& gate) {
  return gate.defined() ? x + y * gate : x + y;
}

}  // namespace lrhost::nn
