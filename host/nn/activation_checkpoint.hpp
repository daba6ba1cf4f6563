// Activation checkpointing: run a function of tensors during a training forward without keeping its
// intermediate activations for backward, keep only its tensor inputs, and run it again inside backward
// to get the gradients (torch.utils.checkpoint's trade: memory for one more forward of the segment).
//
// Semantics, and how they relate to torch.utils.checkpoint (torch 2.x, preserve_rng_state=True):
//  - Like use_reentrant=False, the first run happens with grad mode on (on detached copies of the
//    inputs, the graph dropped as soon as the segment returns), so kernels that choose their path by
//    grad mode (in-place GELU, oneDNN-packed frozen linears) compute exactly what the recompute does
//    and what an unwrapped forward would: outputs and gradients are bit-identical, not just close.
//    Non-reentrant checkpointing gets there with saved-tensor hooks, which LibTorch's C++ API does not
//    offer; here a custom autograd Function (one node per segment) saves the inputs instead.
//  - Like use_reentrant=False, gradients leave the segment through the outer graph: backward re-runs
//    the segment and calls autograd::grad on it (never backward()), then returns the gradients of
//    the inputs and of the `parameters` the function reads as this node's outputs. So DDP's grad-ready
//    hooks and torch::autograd::grad on the outer graph work as without checkpointing, and inputs that
//    need no gradient are fine. The price of not having saved-tensor hooks: the caller names the
//    parameters (tensors captured by the function) whose gradients it wants; a captured tensor that
//    requires grad but is not named gets none (as with use_reentrant=True).
//  - RNG: the CPU generator's state and that of each CUDA device an input lives on are saved before
//    the first run; the recompute runs from them (same dropout masks) and afterwards the generators are
//    put back where backward found them (torch's fork_rng), so the random stream after backward is the
//    same as without checkpointing.
//  - Autocast: the CPU and CUDA autocast states of the first run are re-entered for the recompute.
//    Both runs keep autocast's weight-cast cache off, which only drops a reuse of casts: a cast cached
//    by a run whose graph is thrown away must not be handed to code outside the segment. One
//    consequence, shared with torch.utils.checkpoint (its recompute casts afresh too): a weight that
//    several segments of one autocast forward read (SmolVLA's SigLIP layers with two cameras) gets
//    each segment's gradient in fp32 and summed in fp32, where an unwrapped forward sums them in
//    bf16 through one cached cast before converting; gradients then differ in the last bits (more
//    precise with checkpointing). With a weight read by one segment only, they are bit-identical.
//  - Outside grad mode (no_grad, inference), or when neither an input nor a named parameter requires
//    grad, the function simply runs.
//  - Not supported: double backward through a segment is not tested; the function must not modify
//    its inputs in place (a saved input whose version changed fails in backward, as in torch).
//
// The function runs twice, the second time after the forward has returned: it must capture by value
// everything it reads besides its arguments (tensors, module holders), never references to locals.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <vector>

namespace lrhost::nn {

// Receives the inputs in the order given (undefined entries stay undefined); returns its outputs
// (undefined entries allowed).
using CheckpointedFunction = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;

// Runs `function(inputs)` with activation checkpointing (see above). `parameters`: the tensors the
// function captures whose gradients must be computed (those not requiring grad are skipped).
std::vector<torch::Tensor> checkpoint(const CheckpointedFunction& function, const std::vector<torch::Tensor>& inputs,
                                      const std::vector<torch::Tensor>& parameters);

// The trainable parameters (requires_grad) of the given modules, for checkpoint's `parameters`.
std::vector<torch::Tensor> trainable_parameters(std::initializer_list<const torch::nn::Module*> modules);

}  // namespace lrhost::nn
