// Gemma's scaled token embedding.
#include "host/nn/gemma_embedding.hpp"

#include <cmath>

#include "host/util/error.hpp"

namespace lrhost::nn {

GemmaScaledEmbeddingImpl::GemmaScaledEmbeddingImpl(int64_t vocab_size, int64_t hidden_size, int64_t padding_idx)
    : hidden_size_(hidden_size), padding_idx_(padding_idx) {
  if (vocab_size <= 0 || hidden_size <= 0 || padding_idx < 0 || padding_idx >= vocab_size)
    throw util::ConfigError(
        "GemmaScaledEmbedding: vocab_size and hidden_size must be positive and padding_idx in "
        "[0, vocab_size), got " +
        std::to_string(vocab_size) + ", " + std::to_string(hidden_size) + ", " + std::to_string(padding_idx));
  // nn.Embedding's init: N(0, 1) with the padding row zeroed.
  weight = register_parameter("weight", torch::randn({vocab_size, hidden_size}));
  torch::NoGradGuard no_grad;
  weight[padding_idx].zero_();
}

torch::Tensor GemmaScaledEmbeddingImpl::scale_tensor() const {
  // torch.tensor(hidden_size**0.5) is fp32; then .to(weight.dtype).
  return torch::scalar_tensor(std::sqrt(static_cast<double>(hidden_size_)), torch::kFloat32)
      .to(weight.device())
      .to(weight.scalar_type());
}

double GemmaScaledEmbeddingImpl::scale() const {
  return scale_tensor().to(torch::kDouble).item<double>();
}

torch::Tensor GemmaScaledEmbeddingImpl::forward(const torch::Tensor& ids) {
  if (c10::isFloatingType(ids.scalar_type()) || ids.scalar_type() == torch::kBool)
    throw util::DataError("GemmaScaledEmbedding: token ids must be integers, got " +
                          std::string(c10::toString(ids.scalar_type())));
  // A CPU check for a message naming the range; on a GPU it would cost a synchronisation every call.
  if (ids.numel() > 0 && ids.device().is_cpu()) {
    const auto low = ids.min().item<int64_t>(), high = ids.max().item<int64_t>();
    if (low < 0 || high >= weight.size(0))
      throw util::DataError("GemmaScaledEmbedding: token ids must lie in [0, " + std::to_string(weight.size(0)) +
                            "), got [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return torch::embedding(weight, ids.to(weight.device()), padding_idx_) * scale_tensor();
}

}  // namespace lrhost::nn
