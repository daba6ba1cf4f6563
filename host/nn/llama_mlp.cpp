// SwiGLU MLP with transformers' module names.
#include "host/nn/llama_mlp.hpp"

#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

LlamaMLPImpl::LlamaMLPImpl(int64_t hidden_size, int64_t intermediate_size, bool bias, std::string activation)
    : tanh_gelu_(activation == "gelu_pytorch_tanh") {
  if (activation != "silu" && !tanh_gelu_)
    throw util::ConfigError("LlamaMLP: activation must be 'silu' or 'gelu_pytorch_tanh', got '" + activation + "'");
  auto linear = [&](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
  };
  gate_proj = register_module("gate_proj", linear(hidden_size, intermediate_size));
  up_proj = register_module("up_proj", linear(hidden_size, intermediate_size));
  down_proj = register_module("down_proj", linear(intermediate_size, hidden_size));
}

torch::Tensor LlamaMLPImpl::forward(const torch::Tensor& x) {
  auto gate = apply_linear(gate_proj, x);
  auto activated = tanh_gelu_ ? torch::gelu(gate, "tanh") : torch::silu(gate);
  return apply_linear(down_proj, activated * apply_linear(up_proj, x));
}

}  // namespace lrhost::nn
