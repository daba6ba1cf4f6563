// RMSNorm as transformers' LlamaRMSNorm computes it: in fp32 whatever the input dtype,
// x·rsqrt(mean(x²) + eps), cast back to the input dtype, and only then multiplied by the weight
// (so a bf16 weight on an fp32 input gives an fp32 result by type promotion, as in PyTorch).
#pragma once
#include <torch/torch.h>

namespace lrhost::nn {

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t hidden_size, double eps);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;  // ones at construction, as transformers initialises it

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

}  // namespace lrhost::nn
