// transformers' LlamaMLP (SwiGLU): down_proj(act(gate_proj(x)) * up_proj(x)), act = SiLU for Llama;
// gelu_pytorch_tanh is accepted too so Gemma-style MLPs (pi0) can reuse the module.
#pragma once
#include <torch/torch.h>

#include <string>

namespace lrhost::nn {

class LlamaMLPImpl : public torch::nn::Module {
 public:
  LlamaMLPImpl(int64_t hidden_size, int64_t intermediate_size, bool bias, std::string activation = "silu");
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 private:
  bool tanh_gelu_;
};
TORCH_MODULE(LlamaMLP);

}  // namespace lrhost::nn
