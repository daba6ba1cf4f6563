// Pixel-shuffle connector (see pixel_shuffle_connector.hpp).
#include "host/nn/pixel_shuffle_connector.hpp"

#include <cmath>

#include "host/util/error.hpp"

namespace lrhost::nn {

torch::Tensor pixel_shuffle_tokens(const torch::Tensor& x, int64_t scale_factor) {
  if (x.dim() != 3) throw util::Error("pixel_shuffle_tokens: expected (B, patches, dim), got " + c10::str(x.sizes()));
  if (scale_factor <= 0)
    throw util::Error("pixel_shuffle_tokens: scale factor must be positive, got " + std::to_string(scale_factor));
  const int64_t batch = x.size(0), seq = x.size(1), dim = x.size(2);
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(seq))));
  if (side * side != seq || side % scale_factor != 0)
    throw util::Error("pixel_shuffle_tokens: " + std::to_string(seq) + " patches are not a square grid whose side is " +
                      "divisible by the scale factor " + std::to_string(scale_factor));
  const int64_t s = scale_factor, reduced = side / s;
  // transformers' sequence of views and permutes, one for one.
  auto y = x.view({batch, side, side, dim});
  y = y.view({batch, side, reduced, dim * s});
  y = y.permute({0, 2, 1, 3});
  y = y.reshape({batch, reduced, reduced, dim * s * s});
  y = y.permute({0, 2, 1, 3});
  return y.reshape({batch, seq / (s * s), dim * s * s});
}

ModalityProjectionImpl::ModalityProjectionImpl(int64_t in_features, int64_t out_features) {
  proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(in_features, out_features).bias(false)));
}

PixelShuffleConnectorImpl::PixelShuffleConnectorImpl(int64_t vision_hidden, int64_t text_hidden, int64_t scale_factor)
    : scale_factor_(scale_factor) {
  if (vision_hidden <= 0 || text_hidden <= 0 || scale_factor <= 0)
    throw util::ConfigError(
        "pixel-shuffle connector: vision width, text width and scale_factor must be positive, got " +
        std::to_string(vision_hidden) + ", " + std::to_string(text_hidden) + ", " + std::to_string(scale_factor));
  modality_projection = register_module("modality_projection",
                                        ModalityProjection(vision_hidden * scale_factor * scale_factor, text_hidden));
}

torch::Tensor PixelShuffleConnectorImpl::forward(const torch::Tensor& image_hidden_states) {
  return modality_projection->forward(pixel_shuffle_tokens(image_hidden_states, scale_factor_));
}

}  // namespace lrhost::nn
