// One-pass Adam/AdamW update for CPU and CUDA parameters. LibTorch's Adam runs about ten tensor
// operations per parameter (each a full pass over memory, two of them allocating), which made the
// optimizer step a third of Diffusion's CPU training step. fp32 CPU parameters go through a loop that
// reads each parameter, gradient and moment once and writes them once, with LibTorch's formulas in
// LibTorch's order; bf16/fp16 CPU parameters (SmolVLA's expert) and CUDA parameters (any floating
// dtype) through ATen's fused Adam/AdamW kernel, one launch per parameter group instead of ~10 per
// parameter, which computes a reduced-precision update in fp32 and rounds it once (LibTorch's step
// rounds each intermediate). The per-parameter state stays LibTorch's (step, exp_avg, exp_avg_sq in
// the optimizer's own state map), so saving, loading and resuming optimizer state are unchanged.
// Parameters it cannot handle (a mix of CPU and CUDA, other CPU dtypes, amsgrad, sparse or
// non-contiguous tensors) are left to LibTorch's step; so is everything with the optimizer option
// fused = false.
#pragma once
#include <torch/torch.h>

namespace lrhost::optim {

// Applies the update to every parameter of `optimizer` (a torch::optim::Adam when decoupled is
// false, AdamW when true) that it can handle and returns true if that was all of them; returns
// false, having changed nothing, when some parameter needs LibTorch's step.
bool fused_adam_step(torch::optim::Optimizer& optimizer, bool decoupled_weight_decay);

}  // namespace lrhost::optim
