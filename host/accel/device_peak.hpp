// The dense peak FLOP rate of the device a rank trains on, for the step line's mfu (model FLOP
// utilisation: achieved FLOP/s over this peak). From a small table of known NVIDIA GPUs, by the name
// CUDA reports, for the dtype the matmuls run in: bf16/fp16 under autocast, TF32 when float32 matmuls
// may use it, float32 otherwise. The figures are the vendors' dense (not 2:4-sparse) tensor-core
// peaks per GPU; accelerator.peak_tflops overrides them (any device, the CPU included).
#pragma once
#include <optional>
#include <string>

#include "host/accel/mixed_precision.hpp"

namespace lrhost::accel {

enum class MatmulPrecision { bf16, fp16, tf32, fp32 };

// The matmul dtype of a step under `mixed_precision` with float32 weights; `tf32`: float32 matmuls
// may run in TF32 (torch.backends.cuda.matmul.allow_tf32).
MatmulPrecision matmul_precision(MixedPrecision mixed_precision, bool tf32);

// Peak FLOP/s of the GPU named `device_name` ("NVIDIA H100 80GB HBM3") at `precision`; nullopt for a
// device the table does not know.
std::optional<double> known_peak_flops(const std::string& device_name, MatmulPrecision precision);

}  // namespace lrhost::accel
