// Applying a torch::nn::Linear as the VLM blocks need it.
//  - With its LoRA adapter, when one is attached (lora.hpp): PEFT's y = base(x) + B(A(x)) * scaling.
//  - Exactly as Python's nn.Linear: the C++ frontend's Linear::forward computes matmul and bias add
//    in two roundings for inputs that are not 2-D; PyTorch calls the fused at::linear, and in bf16
//    the two differ by whole ulps. Every host/nn block that must equal its Hugging Face original
//    goes through apply_linear.
//  - Faster for frozen weights on CPU: a Linear whose parameters need no gradient (a frozen tower),
//    applied in fp32 on CPU to an input that needs none, runs oneDNN's matmul on a copy of the weight
//    reordered once into oneDNN's blocked layout (what torch.compile's CPU "freezing" does) instead
//    of re-reading the plain weight every call. The copy is cached per weight and rebuilt when the
//    weight changes (version counter or storage) or is freed; it costs as much memory as the weight.
//    Results equal at::linear up to fp32 rounding (another summation order: ~1e-6 relative); the
//    switch below turns it off where bit-exact equality with PyTorch is wanted.
#pragma once
#include <torch/nn/modules/linear.h>

namespace lrhost::nn {

torch::Tensor apply_linear(const torch::nn::Linear& layer, const torch::Tensor& input);

// Whether apply_linear takes the reordered-weight path for this weight and input (callers that fuse
// several Linears into one GEMM skip the fusion then: the fused weight would be repacked every call).
bool uses_cpu_packed_linear(const torch::Tensor& weight, const torch::Tensor& input);

// Process-wide switch for the reordered-weight CPU path (default on; LRHOST_CPU_PACKED_LINEAR=0 turns
// it off at start-up). Returns the previous setting.
bool set_cpu_packed_linear(bool enabled);
bool cpu_packed_linear_enabled();

// How many reordered weights the cache holds (tests).
std::size_t cpu_packed_linear_cache_size();

}  // namespace lrhost::nn
