// Process-wide switches for lrhost's exact-math speed-ups: each computes what LeRobot computes,
// in another order or memory layout, so results agree up to rounding (the tolerances are stated
// where each is tested). All are off by default: they pay on a GPU and on small CPU images, not on
// every CPU shape (docs/benchmarks.md), and their rounding moves ACT's backbone gradients outside
// the LeRobot interop tolerance (up to 3e-3 of the largest entry), so LeRobot parity stays the
// default; recipes and benchmarks turn them on with lr.fast_paths{...} (bindings), and the
// equivalence tests run both ways.
#pragma once

namespace lrhost::policy {

struct FastPaths {
  // A frozen batch norm after a convolution becomes that convolution's folded weight and bias
  // (W * scale, shift) once per forward instead of a scale and shift over the whole feature map.
  bool fold_frozen_batch_norm = false;
  // The ResNet trunk runs in channels-last memory format (oneDNN's native layout on CPU, tensor
  // cores' on GPU); its output is converted back before anything layout-sensitive.
  bool channels_last = false;
};

FastPaths& fast_paths();

}  // namespace lrhost::policy
