// The precision startup line; see precision_report.hpp.
#include "host/accel/precision_report.hpp"

#include <set>

namespace lrhost::accel {
namespace {

std::string dtype_name(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat32:
      return "float32";
    case torch::kBFloat16:
      return "bfloat16";
    case torch::kFloat16:
      return "float16";
    case torch::kFloat64:
      return "float64";
    default:
      return c10::toString(type);
  }
}

}  // namespace

PrecisionReport describe_precision(const std::vector<torch::ScalarType>& weight_dtypes,
                                   MixedPrecision mixed_precision) {
  std::set<std::string> names;
  bool low = false;
  for (auto type : weight_dtypes) {
    names.insert(dtype_name(type));
    low = low || type == torch::kBFloat16 || type == torch::kFloat16;
  }
  std::string weights;
  for (const auto& name : names) weights += (weights.empty() ? "" : " and ") + name;
  if (weights.empty()) weights = "none trainable";
  PrecisionReport report;
  report.text = "policy weights " + weights +
                ", accelerator.mixed_precision=" + std::string(kMixedPrecisionNames.name(mixed_precision)) + ": ";
  if (mixed_precision == MixedPrecision::bf16) {
    report.text += "forward and backward under bf16 autocast";
  } else if (mixed_precision == MixedPrecision::fp16) {
    report.text += "forward and backward under fp16 autocast with loss scaling";
  } else if (low) {
    report.warn = true;
    report.text += "forward and backward run in the " + weights +
                   " weights without autocast; LeRobot's lerobot-train adds bf16 autocast for such a policy "
                   "(set accelerator.mixed_precision=bf16 to match it)";
  } else {
    report.text += "forward and backward in " + weights + ", no autocast";
  }
  return report;
}

}  // namespace lrhost::accel
