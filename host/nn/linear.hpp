// Applying a torch::nn::Linear exactly as Python's nn.Linear does. The C++ frontend's
// Linear::forward computes matmul and bias add in two roundings for inputs that are not 2-D; PyTorch
// calls the fused at::linear, and in bf16 the two differ by whole ulps. Every host/nn block that must
// equal its Hugging Face original goes through this.
#pragma once
#include <torch/nn/modules/linear.h>

namespace lrhost::nn {

inline torch::Tensor apply_linear(const torch::nn::Linear& layer, const torch::Tensor& input) {
  return torch::linear(input, layer->weight, layer->bias);
}

}  // namespace lrhost::nn
