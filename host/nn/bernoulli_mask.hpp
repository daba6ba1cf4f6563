// at::dropout's scaled Bernoulli mask drawn in bulk from ATen's CPU engine (at::mt19937), the same
// values and the same engine state afterwards as ATen's per-element loop (see dropout.hpp for why).
// Plain C++ on the engine's state, kept apart from LibTorch's tensors so that this one file builds
// with -O3 and an AVX2 variant chosen at run time (the build's baseline is x86-64 SSE2 at -O2, where
// neither the twist nor the 64-bit comparisons vectorize: 4x slower here).
#pragma once
#include <ATen/core/MT19937RNGEngine.h>

#include <cstdint>

namespace lrhost::nn {

// Writes n mask values: each is at::bernoulli_distribution<double>(keep) drawn from `engine` (two
// 32-bit words, the first the high half; its low 53 bits scaled by 2^-53 are the uniform draw, kept
// when below `keep`), times 1 / keep rounded in float as at::dropout's div_ does: 1.0f / float(keep)
// or 0. `engine` advances by 2n words, as n such draws advance it. keep must be in (0, 1).
void fill_dropout_mask(at::mt19937_data_pod& engine, float* mask, int64_t n, double keep);

}  // namespace lrhost::nn
