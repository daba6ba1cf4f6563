// Device peaks for mfu (host/accel/device_peak.hpp): names as CUDA reports them pick the right card
// (the PCIe H100 before the SXM one, the L40S before the L4), the matmul dtype picks the column, and
// an unknown device has none.
#include <doctest/doctest.h>

#include "host/accel/device_peak.hpp"

using lrhost::accel::known_peak_flops;
using lrhost::accel::matmul_precision;
using lrhost::accel::MatmulPrecision;
using lrhost::accel::MixedPrecision;

TEST_CASE("device peak: the matmul dtype of a step") {
  CHECK(matmul_precision(MixedPrecision::bf16, false) == MatmulPrecision::bf16);
  CHECK(matmul_precision(MixedPrecision::fp16, true) == MatmulPrecision::fp16);
  CHECK(matmul_precision(MixedPrecision::no, true) == MatmulPrecision::tf32);
  CHECK(matmul_precision(MixedPrecision::no, false) == MatmulPrecision::fp32);
}

TEST_CASE("device peak: known GPUs by their CUDA names, dense figures per dtype") {
  CHECK(known_peak_flops("NVIDIA H100 80GB HBM3", MatmulPrecision::bf16) == 989e12);
  CHECK(known_peak_flops("NVIDIA H100 PCIe", MatmulPrecision::bf16) == 756e12);
  CHECK(known_peak_flops("NVIDIA H200", MatmulPrecision::fp32) == 67e12);
  CHECK(known_peak_flops("NVIDIA A100-SXM4-80GB", MatmulPrecision::tf32) == 156e12);
  CHECK(known_peak_flops("NVIDIA L40S", MatmulPrecision::bf16) == 362e12);
  CHECK(known_peak_flops("NVIDIA L4", MatmulPrecision::bf16) == 121e12);
  CHECK(known_peak_flops("NVIDIA GeForce RTX 4090", MatmulPrecision::fp16) == 165e12);
  CHECK_FALSE(known_peak_flops("NVIDIA GeForce GTX 1080", MatmulPrecision::fp32));
  CHECK_FALSE(known_peak_flops("", MatmulPrecision::bf16));
}
