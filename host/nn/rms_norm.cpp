// RMSNorm with LlamaRMSNorm's cast order.
#include "host/nn/rms_norm.hpp"

namespace lrhost::nn {

RMSNormImpl::RMSNormImpl(int64_t hidden_size, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({hidden_size}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  const auto input_dtype = x.scalar_type();
  auto h = x.to(torch::kFloat32);
  auto variance = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * torch::rsqrt(variance + eps_);
  return weight * h.to(input_dtype);
}

}  // namespace lrhost::nn
