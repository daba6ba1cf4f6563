// How many bytes of activations one training sample costs: what a policy's training forward leaves
// alive for backward (autograd's saved tensors, the loss), measured rather than modelled. The
// policy's forward runs on CPU on example batches of one and of two samples built from its
// features (example_batch); the growth of the process's live heap while each graph is alive is
// read from glibc (mallinfo2), and the difference of the two is the cost per sample, free of
// what a batch costs once. `lrhost show` prints it beside the memory plan.
//
// The figure is for the policy's dtypes on CPU. Under bf16 autocast on a GPU, most activations are
// bf16 and the figure roughly halves; fused GPU kernels may keep a little less or more.
#pragma once
#include <cstdint>
#include <functional>

#include "host/policy/policy.hpp"

namespace lrhost::policy {

// A batch a policy's forward accepts, `batch_size` samples of zeros (masks all valid): every input
// feature, each action with its chunk (`<key>_is_pad` beside it), a time axis where the policy asks
// for several frames (delta_indices), and language tokens for policies that read a task.
Batch example_batch(const Policy& policy, int64_t batch_size);

struct ActivationCost {
  int64_t per_sample = 0;  // bytes each further sample adds
  int64_t one_sample = 0;  // bytes alive after the forward of a batch of one
};

// Runs three training forwards (a warm-up, then batches of one and two from `make_batch`, by
// default example_batch; train mode, gradients on, no backward) on the CPU policy and restores its
// mode. Parameters are not touched.
ActivationCost measure_activations(Policy& policy, const std::function<Batch(int64_t)>& make_batch = {});

}  // namespace lrhost::policy
