// How many bytes of activations one training sample costs: what a policy's training forward leaves
// alive for backward (autograd's saved tensors, the loss), measured rather than modelled. The
// policy's forward runs on CPU on example batches of one and of two samples built from its
// features (example_batch); the bytes of CPU tensor storages the forward allocated and that are
// still alive while its graph is (tensor_bytes_meter.hpp) are counted for each, and the difference
// of the two is the cost per sample, free of what a batch costs once. `lrhost show` prints it
// beside the memory plan.
//
// Tensor storages, not the process heap: the heap also grows by the math library's own buffers
// (MKL keeps per-thread workspace that scales with the problem on some CPUs), and in the lrhost
// binary it is jemalloc's, which glibc's counters do not see. The heap's growth, read from the
// allocator actually in use (util/heap_bytes.hpp), is kept beside the figure as a cross-check: it
// must be at least the tensors' bytes, give or take what the allocator rounds.
//
// With gradient checkpointing the forward keeps only each layer's input, and the backward
// recomputes one layer at a time: its peak is those inputs plus one layer's recomputation, which the
// forward alone never shows. The probe then measures through the backward (backward_peak).
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

// What the probe counts: what the training forward leaves alive for backward (the peak without
// gradient checkpointing, reached as backward starts), or the highest point of forward and backward
// together (with it).
enum class ActivationMeasure { kept_for_backward, backward_peak };
inline ActivationMeasure activation_measure(bool gradient_checkpointing) {
  return gradient_checkpointing ? ActivationMeasure::backward_peak : ActivationMeasure::kept_for_backward;
}

struct ActivationCost {
  int64_t per_sample = 0;       // tensor bytes each further sample adds (of the measure asked for)
  int64_t one_sample = 0;       // tensor bytes at a batch of one
  int64_t heap_per_sample = 0;  // the cross-check: what each further sample adds to the live heap
                                // (kept_for_backward only; 0 for backward_peak)
};

// Runs three training forwards (a warm-up, then batches of one and two from `make_batch`, by
// default example_batch; train mode, gradients on) on the CPU policy, each followed by its backward
// for backward_peak, and restores its mode and its parameters' gradients. Parameters are not
// touched. Counts the calling thread's allocations only (see tensor_bytes_meter.hpp; a CPU backward
// runs on the calling thread), so a profiler running on this thread misses the probe's passes.
ActivationCost measure_activations(Policy& policy, const std::function<Batch(int64_t)>& make_batch = {},
                                   ActivationMeasure measure = ActivationMeasure::kept_for_backward);

}  // namespace lrhost::policy
