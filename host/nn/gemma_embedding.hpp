// transformers' GemmaTextScaledWordEmbedding: a token embedding whose rows are multiplied by
// √hidden_size, the factor first rounded to the weight's dtype (transformers keeps it in a
// non-persistent buffer that `model.to(bfloat16)` rounds, and casts it to the weight dtype anyway):
// √2048 = 45.254833 in fp32 but 45.25 in bf16. The product is computed in the weight dtype.
// Only `weight` is a tensor of the module, so strict loading expects `embed_tokens.weight` alone.
#pragma once
#include <torch/torch.h>

namespace lrhost::nn {

class GemmaScaledEmbeddingImpl : public torch::nn::Module {
 public:
  // padding_idx: the row nn.Embedding gives no gradient (Gemma's pad_token_id).
  GemmaScaledEmbeddingImpl(int64_t vocab_size, int64_t hidden_size, int64_t padding_idx);
  // ids (any shape, integer) -> (..., hidden) in the weight's dtype.
  torch::Tensor forward(const torch::Tensor& ids);
  // The factor as the forward applies it: √hidden_size rounded to the weight's dtype, as a double.
  double scale() const;

  torch::Tensor weight;

 private:
  torch::Tensor scale_tensor() const;
  int64_t hidden_size_, padding_idx_;
};
TORCH_MODULE(GemmaScaledEmbedding);

}  // namespace lrhost::nn
