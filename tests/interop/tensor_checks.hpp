// What the C++ halves of the interop tests share: a report line per compared item (and the failure
// count main returns), the largest absolute value, and the gradient bound the VLA issues use
// (|got - want| <= 1e-5 + 1e-4 |want| element by element, reported as the largest excess over
// 1e-4 |want|, to be compared with 1e-5).
#pragma once
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "host/io/safetensors.hpp"
#include "host/util/error.hpp"

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

// Every parameter's gradient (only those that require one with `trainable_only`) against the
// reference tensor `key_prefix + name` in `want`, as one report line naming the worst tensor. A
// parameter the reference lacks fails, unless `unused_may_lack` and its gradient is absent or zero
// (a parameter the reference model never used, e.g. a final norm before a tap). `expected`: how many
// references the oracle wrote (-1: not checked). Returns how many were compared.
inline int64_t check_gradients(torch::nn::Module& module, const io::SafetensorsContent& want,
                               const std::string& key_prefix, bool trainable_only, bool unused_may_lack,
                               int64_t expected = -1) {
  double worst = -1;
  std::string worst_name;
  int64_t compared = 0;
  for (const auto& item : module.named_parameters()) {
    if (trainable_only && !item.value().requires_grad()) continue;
    const torch::Tensor& grad = item.value().grad();
    const auto* reference = want.find(key_prefix + item.key());
    if (!reference) {
      if (!unused_may_lack || (grad.defined() && max_abs(grad) > 0)) {
        std::printf("FAIL: the reference has no gradient of %s\n", item.key().c_str());
        ++failures();
      }
      continue;
    }
    const double excess = gradient_excess(grad, *reference);
    if (excess > worst) {
      worst = excess;
      worst_name = item.key();
    }
    ++compared;
  }
  report("grads of " + std::to_string(compared) + " tensors (worst " + worst_name + ")", worst, 1e-5);
  if (expected >= 0 && compared != expected) {
    std::printf("FAIL: compared %lld gradients, the oracle has %lld\n", static_cast<long long>(compared),
                static_cast<long long>(expected));
    ++failures();
  }
  return compared;
}

// A check program's main: `name ORACLE_DIR`, one LibTorch thread (as the oracle ran), `body` on the
// folder; exit 2 on usage, 1 on an exception (its message) or any failed report, else 0.
inline int run_check(int argc, char** argv, const char* name,
                     const std::function<void(const std::filesystem::path&)>& body) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s ORACLE_DIR\n", name);
    return 2;
  }
  try {
    torch::set_num_threads(1);
    body(argv[1]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", name, util::describe(error).c_str());
    return 1;
  }
  return failures() ? 1 : 0;
}

}  // namespace lrhost::interop
