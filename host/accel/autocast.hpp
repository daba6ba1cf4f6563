// Mixed-precision autocast as a scope: while an AutocastGuard lives, eligible LibTorch ops on its
// device run in the chosen low-precision dtype (bf16 or fp16) while parameters stay fp32.
#pragma once
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace lrhost::accel {

struct AutocastSpec {
  c10::DeviceType device = c10::DeviceType::CPU;
  c10::ScalarType dtype = c10::kBFloat16;
};

// "no" -> nullopt, "bf16" -> bfloat16, "fp16" -> float16; anything else is a ConfigError.
std::optional<c10::ScalarType> parse_mixed_precision(const std::string& mode);

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

}  // namespace lrhost::accel
