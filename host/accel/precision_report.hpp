// The startup line that says in which precision a run trains: the policy weights' dtype and the
// accelerator's mixed precision (autocast), and what that means for forward and backward. A recipe
// that sets policy.dtype = "bfloat16" without accelerator.mixed_precision = "bf16" trains bf16
// weights without autocast, which lerobot-train never does (it adds bf16 autocast for such a
// policy); the line is then a warning naming the setting that matches LeRobot.
#pragma once
#include <torch/types.h>

#include <string>
#include <vector>

#include "host/accel/mixed_precision.hpp"

namespace lrhost::accel {

struct PrecisionReport {
  std::string text;
  bool warn = false;  // low-precision weights without autocast: not what lerobot-train runs
};

// `weight_dtypes`: the dtypes of the trainable parameters (any order, repeats allowed);
PrecisionReport describe_precision(const std::vector<torch::ScalarType>& weight_dtypes, MixedPrecision mixed_precision);

}  // namespace lrhost::accel
