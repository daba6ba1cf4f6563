// Global gradient-norm clipping as torch.nn.utils.clip_grad_norm_ does it on each device: on CUDA
// the foreach form (two multi-tensor launches, the norm left on the device so that the step can be
// captured in a CUDA graph), elsewhere LibTorch's per-parameter form, which LeRobot's bit-exact CPU
// parity relies on.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace lrhost::optim {

// Whether the foreach form applies: every gradient dense, on one CUDA device, in one dtype.
bool foreach_clip_applies(const std::vector<torch::Tensor>& grads);

// Scales `grads` in place so that their global L2 norm is at most max_norm (coefficient
// max_norm / (norm + 1e-6), clamped to 1) and returns the norm before clipping as a 0-d fp32
// tensor on the gradients' device, without waiting for it. Needs foreach_clip_applies(grads).
torch::Tensor clip_grad_norm_foreach(const std::vector<torch::Tensor>& grads, double max_norm);

// The clipped parameters' norm before clipping: the foreach form where it applies, LibTorch's
// clip_grad_norm_ otherwise. Parameters without a gradient are skipped.
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace lrhost::optim
