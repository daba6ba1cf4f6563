// Dropout exactly as at::dropout computes it on CPU, with the mask drawn several times faster.
//
// at::dropout on CPU draws a Bernoulli mask with bernoulli_(1 - p), divides it by 1 - p and multiplies
// the input by it. ATen's scalar bernoulli_ uses MKL's vectorized generator on Intel CPUs only; on
// every other CPU (the AMD machines here) it draws element by element from the default generator's
// MT19937 inside a generic per-element loop: ~8-10 ns per element, 8 % of ACT's CPU training step.
// dropout() draws the same MT19937 words in bulk (a whole 624-word block per twist) and turns each
// pair into the same double-precision comparison, so the mask, the output, its autograd graph
// (a multiplication that saves the scaled mask) and the generator's state afterwards equal
// at::dropout's bit for bit. Where ATen takes its MKL path (Intel CPUs with MKL), for other dtypes or
// devices, non-contiguous inputs, p = 0 or 1, or outside training, it simply calls at::dropout.
#pragma once
#include <ATen/core/Tensor.h>

namespace lrhost::nn {

at::Tensor dropout(const at::Tensor& input, double p, bool train);

// Whether dropout() draws the mask itself for this input (tests compare both paths where it does).
bool draws_dropout_mask_in_bulk(const at::Tensor& input, double p, bool train);

// Process-wide switch (default on; LRHOST_BULK_DROPOUT=0 turns it off at start-up, for comparison).
// Returns the previous setting.
bool set_bulk_dropout(bool enabled);

}  // namespace lrhost::nn
