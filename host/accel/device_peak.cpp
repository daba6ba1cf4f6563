// Dense peak FLOP rates of known GPUs; see device_peak.hpp.
#include "host/accel/device_peak.hpp"

#include <array>

namespace lrhost::accel {
namespace {

// Dense TFLOPS per GPU: bf16, fp16, tf32, fp32 (NVIDIA's datasheets; tensor cores for the first three).
struct KnownDevice {
  const char* name_part;  // matched against the CUDA device name; the first match wins
  double bf16, fp16, tf32, fp32;
};

constexpr std::array kKnownDevices{
    KnownDevice{"H100 PCIe", 756, 756, 378, 51},  // before "H100": the PCIe card is slower
    KnownDevice{"H100 NVL", 835, 835, 418, 60},
    KnownDevice{"H100", 989, 989, 495, 67},  // SXM
    KnownDevice{"H200", 989, 989, 495, 67},
    KnownDevice{"GH200", 989, 989, 495, 67},
    KnownDevice{"B200", 2250, 2250, 1100, 80},
    KnownDevice{"A100", 312, 312, 156, 19.5},
    KnownDevice{"L40S", 362, 362, 183, 91.6},
    KnownDevice{"L40", 181, 181, 90.5, 90.5},  // after "L40S", before "L4"
    KnownDevice{"L4", 121, 121, 60, 30.3},
    KnownDevice{"A10G", 70, 70, 35, 31.2},
    KnownDevice{"RTX 4090", 165, 165, 82.6, 82.6},
    KnownDevice{"RTX 6000 Ada", 364, 364, 182, 91.1},
};

}  // namespace

MatmulPrecision matmul_precision(MixedPrecision mixed_precision, bool tf32) {
  switch (mixed_precision) {
    case MixedPrecision::bf16:
      return MatmulPrecision::bf16;
    case MixedPrecision::fp16:
      return MatmulPrecision::fp16;
    case MixedPrecision::no:
      break;
  }
  return tf32 ? MatmulPrecision::tf32 : MatmulPrecision::fp32;
}

std::optional<double> known_peak_flops(const std::string& device_name, MatmulPrecision precision) {
  for (const auto& device : kKnownDevices) {
    if (device_name.find(device.name_part) == std::string::npos) continue;
    switch (precision) {
      case MatmulPrecision::bf16:
        return device.bf16 * 1e12;
      case MatmulPrecision::fp16:
        return device.fp16 * 1e12;
      case MatmulPrecision::tf32:
        return device.tf32 * 1e12;
      case MatmulPrecision::fp32:
        return device.fp32 * 1e12;
    }
  }
  return std::nullopt;
}

}  // namespace lrhost::accel
