// The image encoder of the Diffusion policy (LeRobot's DiffusionRgbEncoder): optional resize
// (bilinear, antialiased, as torchvision's Resize on tensors), optional crop (random in training
// when crop_is_random, drawing torchvision RandomCrop's two torch::randint numbers; centre crop in
// eval), the ResNet-18 trunk as `backbone.{0..7}` (BatchNorm or GroupNorm), a SpatialSoftmax over
// the layer4 map (`pool.nets` 1x1 conv to K keypoints, buffer `pool.pos_grid`), then `out`
// Linear(2K, 2K) and ReLU: one 2K feature vector per image.
#pragma once
#include <torch/torch.h>

#include <optional>
#include <utility>
#include <vector>

#include "host/policy/vision/resnet18.hpp"

namespace lrhost::policy::diffusion {

struct DiffusionConfig;

// Keypoints as the softmax-weighted mean of a normalized (x, y) grid over each feature channel
// (Finn et al.), after a learned 1x1 projection of the input channels to `num_kp`.
class SpatialSoftmaxImpl : public torch::nn::Module {
 public:
  SpatialSoftmaxImpl(int64_t channels, int64_t height, int64_t width, int64_t num_kp);
  // (B, C, H, W) -> (B, K, 2).
  torch::Tensor forward(const torch::Tensor& features);

 private:
  int64_t height_, width_, num_kp_;
  torch::nn::Conv2d nets_{nullptr};
  torch::Tensor pos_grid_;
};
TORCH_MODULE(SpatialSoftmax);

class DiffusionRgbEncoderImpl : public torch::nn::Module {
 public:
  // Builds the trunk, loads config.pretrained_backbone_weights (a local safetensors file) when set,
  // then sizes the pooling with a dry run of the trunk on zeros, as LeRobot does (in training mode,
  // so BatchNorm statistics see that batch exactly as in PyTorch).
  DiffusionRgbEncoderImpl(const DiffusionConfig& config, const std::vector<int64_t>& image_shape);
  // (B, 3, H, W) -> (B, feature_dim).
  torch::Tensor forward(const torch::Tensor& x);
  int64_t feature_dim() const { return feature_dim_; }
  // The trunk's input (height, width) after the resize and crop: what the training FLOPs are of.
  std::pair<int64_t, int64_t> trunk_input_size() const { return trunk_input_size_; }

 private:
  torch::Tensor crop(const torch::Tensor& x) const;

  std::optional<std::vector<int64_t>> resize_shape_, crop_shape_;
  bool crop_is_random_ = true;
  int64_t feature_dim_ = 0;
  std::pair<int64_t, int64_t> trunk_input_size_;
  vision::ResNet18 backbone_{nullptr};
  SpatialSoftmax pool_{nullptr};
  torch::nn::Linear out_{nullptr};
};
TORCH_MODULE(DiffusionRgbEncoder);

}  // namespace lrhost::policy::diffusion
