// One-pass Adam/AdamW update for float32 CPU parameters and CUDA parameters. LibTorch's Adam runs about ten tensor
// operations per parameter (each a full pass over memory, two of them allocating), which made the
// optimizer step a third of Diffusion's CPU training step; this reads each parameter, gradient and
// moment once and writes them once, with LibTorch's formulas and its per-parameter state (step,
// exp_avg, exp_avg_sq in the optimizer's own state map), so saving, loading and resuming optimizer
// state are unchanged. On CUDA (any floating dtype, bf16 included) each parameter group is one
// launch of ATen's fused Adam/AdamW kernel instead of LibTorch's ~10 launches per parameter, the
// host-side cost that dominated ACT's optimizer step on a GPU. Parameters it cannot handle (a mix of
// CPU and CUDA, other CPU dtypes, amsgrad, sparse or non-contiguous tensors) are left to LibTorch's step.
#pragma once
#include <torch/torch.h>

namespace lrhost::optim {

// Applies the update to every parameter of `optimizer` (a torch::optim::Adam when decoupled is
// false, AdamW when true) that it can handle and returns true if that was all of them; returns
// false, having changed nothing, when some parameter needs LibTorch's step.
bool fused_adam_step(torch::optim::Optimizer& optimizer, bool decoupled_weight_decay);

}  // namespace lrhost::optim
