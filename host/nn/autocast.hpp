// Mixed-precision autocast as a scope: while an AutocastGuard lives, eligible LibTorch ops on its
// device run in the chosen low-precision dtype (bf16 or fp16) while parameters stay fp32.
// It lives in nn/, not accel/: it is a property of how a module's forward computes and needs only
// c10/ATen, and the policy base (below the accelerator) runs its training forward under it; the
// accelerator only chooses the spec from its mixed_precision setting (accelerator.cpp).
#pragma once
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>

namespace lrhost::nn {

struct AutocastSpec {
  c10::DeviceType device = c10::DeviceType::CPU;
  c10::ScalarType dtype = c10::kBFloat16;
};

class AutocastGuard {
 public:
  explicit AutocastGuard(const std::optional<AutocastSpec>& spec);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<AutocastSpec> spec_;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::kBFloat16;
};

}  // namespace lrhost::nn
