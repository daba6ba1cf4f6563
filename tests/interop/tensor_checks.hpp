// What the C++ halves of the interop tests share: a report line per compared item (and the failure
// count main returns), the largest absolute value, and the gradient bound the VLA issues use
// (|got - want| <= 1e-5 + 1e-4 |want| element by element, reported as the largest excess over
// 1e-4 |want|, to be compared with 1e-5).
#pragma once
#include <torch/torch.h>

#include <cstdio>
#include <string>

namespace lrhost::interop {

inline int& failures() {
  static int count = 0;
  return count;
}

inline void report(const std::string& what, double difference, double bound) {
  const bool ok = difference <= bound;
  if (!ok) ++failures();
  std::printf("%s %-56s %.3g (bound %.3g)\n", ok ? "ok:  " : "FAIL:", what.c_str(), difference, bound);
}

inline double max_abs(const torch::Tensor& t) {
  return t.numel() ? t.abs().max().item<double>() : 0.0;
}

inline double gradient_excess(const torch::Tensor& got, const torch::Tensor& want) {
  return ((got - want).abs() - 1e-4 * want.abs()).max().item<double>();
}

}  // namespace lrhost::interop
