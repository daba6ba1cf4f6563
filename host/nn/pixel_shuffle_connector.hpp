// The vision-to-text connector of SmolVLM / Idefics3 (transformers 5.5 SmolVLMConnector): a pixel
// shuffle that merges each scale×scale block of patch features into one token (space-to-depth), then
// `modality_projection.proj`, a bias-free Linear to the text width. With scale s on an n×n patch grid,
// token k covers patch rows s·(k / (n/s)) .. +s-1 and columns s·(k % (n/s)) .. +s-1; its feature vector is
// those s² patches' features concatenated row-major. That is transformers' exact view/permute order
// (pixel_shuffle), which a checkpoint's proj weight depends on.
#pragma once
#include <torch/torch.h>

#include "host/nn/linear.hpp"

namespace lrhost::nn {

// (B, n·n, D) -> (B, n·n / s², D·s²), transformers' SmolVLMConnector.pixel_shuffle. n·n must be a
// perfect square with n divisible by s.
torch::Tensor pixel_shuffle_tokens(const torch::Tensor& x, int64_t scale_factor);

// SmolVLMSimpleMLP: a holder for `proj` so the key reads modality_projection.proj.weight.
class ModalityProjectionImpl : public torch::nn::Module {
 public:
  ModalityProjectionImpl(int64_t in_features, int64_t out_features);
  torch::Tensor forward(const torch::Tensor& x) { return apply_linear(proj, x); }

  torch::nn::Linear proj{nullptr};
};
TORCH_MODULE(ModalityProjection);

class PixelShuffleConnectorImpl : public torch::nn::Module {
 public:
  // vision_hidden: the vision tower's width; text_hidden: the language model's width.
  PixelShuffleConnectorImpl(int64_t vision_hidden, int64_t text_hidden, int64_t scale_factor);
  // (B, n·n, vision_hidden) -> (B, n·n / s², text_hidden).
  torch::Tensor forward(const torch::Tensor& image_hidden_states);

  int64_t scale_factor() const { return scale_factor_; }

  ModalityProjection modality_projection{nullptr};

 private:
  int64_t scale_factor_;
};
TORCH_MODULE(PixelShuffleConnector);

}  // namespace lrhost::nn
