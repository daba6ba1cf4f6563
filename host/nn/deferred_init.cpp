// DeferredInit: a thread-local flag, and moving parameters to the meta device.
#include "host/nn/deferred_init.hpp"

namespace lrhost::nn {
namespace {
thread_local bool deferring = false;
}  // namespace

DeferredInit::DeferredInit() : previous_(deferring) {
  deferring = true;
}
DeferredInit::~DeferredInit() {
  deferring = previous_;
}

bool deferring_init() {
  return deferring;
}

namespace {
torch::Tensor released_like(const torch::Tensor& p, c10::ScalarType dtype) {
  return torch::zeros({1}, p.options().dtype(dtype).requires_grad(false)).expand(p.sizes());
}
}  // namespace

void release_parameters(torch::nn::Module& module) {
  if (!deferring) return;
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters())
    if (!is_released(p)) p.set_data(released_like(p, p.scalar_type()));
}

bool is_released(const torch::Tensor& tensor) {
  return tensor.numel() > 1 && tensor.storage().nbytes() < static_cast<std::size_t>(tensor.nbytes());
}

void convert_to(torch::nn::Module& module, c10::ScalarType dtype) {
  if (!deferring) {
    module.to(dtype);
    return;
  }
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters())
    if (p.is_floating_point()) p.set_data(is_released(p) ? released_like(p, dtype) : p.to(dtype));
  for (auto& b : module.buffers())
    if (b.is_floating_point()) b.set_data(b.to(dtype));
}

}  // namespace lrhost::nn
