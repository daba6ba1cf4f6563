// DiffusionRgbEncoder and SpatialSoftmax: preprocessing, trunk, keypoint pooling and projection.
#include "host/policy/diffusion/rgb_encoder.hpp"

#include "host/policy/diffusion/diffusion_config.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::diffusion {
namespace {

// numpy.linspace(-1, 1, n) in float64: i * (2 / (n - 1)) - 1 with the last point set to exactly 1,
// and [-1] for n == 1. LeRobot builds the grid with numpy because torch.linspace rounds differently.
std::vector<double> numpy_linspace(int64_t n) {
  std::vector<double> values(static_cast<size_t>(n));
  const double step = n > 1 ? 2.0 / static_cast<double>(n - 1) : 0.0;
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = (n > 1 ? static_cast<double>(i) * step : 0.0) - 1.0;
  if (n > 1) values.back() = 1.0;
  return values;
}

// One ResNet stage that halves a side: floor((n - 1) / 2) + 1 (conv1, maxpool, layer2..4 all do).
int64_t halve(int64_t n) {
  return (n - 1) / 2 + 1;
}

// Python's round() of k / 2 for an integer k: halves go to the even neighbour (torchvision's
// centre-crop offset is int(round((H - h) / 2.0))).
int64_t round_half_even_of_half(int64_t k) {
  if (k % 2 == 0) return k / 2;
  const int64_t low = (k - 1) / 2, high = (k + 1) / 2;
  return low % 2 == 0 ? low : high;
}

}  // namespace

SpatialSoftmaxImpl::SpatialSoftmaxImpl(int64_t channels, int64_t height, int64_t width, int64_t num_kp)
    : height_(height), width_(width), num_kp_(num_kp) {
  nets_ = register_module("nets", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, num_kp, 1)));
  // Row-major (H*W, 2) grid of (x, y): x varies along the width, y along the height.
  auto xs = numpy_linspace(width), ys = numpy_linspace(height);
  auto grid = torch::empty({height * width, 2}, torch::kFloat64);
  auto accessor = grid.accessor<double, 2>();
  for (int64_t i = 0; i < height; ++i)
    for (int64_t j = 0; j < width; ++j) {
      accessor[i * width + j][0] = xs[static_cast<size_t>(j)];
      accessor[i * width + j][1] = ys[static_cast<size_t>(i)];
    }
  pos_grid_ = register_buffer("pos_grid", grid.to(torch::kFloat32));
}

torch::Tensor SpatialSoftmaxImpl::forward(const torch::Tensor& features_in) {
  auto features = nets_->forward(features_in);
  // (B, K, H, W) -> (B*K, H*W): a softmax over positions per keypoint channel.
  auto attention = torch::softmax(features.reshape({-1, height_ * width_}), -1);
  auto expected_xy = attention.matmul(pos_grid_);
  return expected_xy.view({-1, num_kp_, 2});
}

DiffusionRgbEncoderImpl::DiffusionRgbEncoderImpl(const DiffusionConfig& config, const std::vector<int64_t>& image_shape)
    : resize_shape_(config.resize_shape), crop_shape_(config.crop_shape), crop_is_random_(config.crop_is_random) {
  vision::ResNet18Options options;
  options.norm = config.use_group_norm ? vision::NormKind::GroupNorm : vision::NormKind::BatchNorm;
  options.numbered_children = true;  // nn.Sequential(*resnet18.children()[:-2])
  backbone_ = register_module("backbone", vision::ResNet18(options));
  if (config.pretrained_backbone_weights) backbone_->load_torchvision_weights(*config.pretrained_backbone_weights);

  // The trunk's input size after the preprocessing: crop, else resize, else the image itself.
  std::vector<int64_t> input_hw{image_shape[1], image_shape[2]};
  if (crop_shape_)
    input_hw = *crop_shape_;
  else if (resize_shape_)
    input_hw = *resize_shape_;
  trunk_input_size_ = {input_hw[0], input_hw[1]};
  int64_t h = input_hw[0], w = input_hw[1];
  for (int i = 0; i < 5; ++i) h = halve(h), w = halve(w);
  if (!config.use_group_norm && h * w == 1)
    throw util::ConfigError(
        "policy 'diffusion': a " + std::to_string(input_hw[0]) + "x" + std::to_string(input_hw[1]) +
            " backbone input gives a 1x1 ResNet-18 feature map, on which BatchNorm cannot run in training "
            "(LeRobot fails the same way when it sizes the pooling)",
        "use images (after resize/crop) larger than 32x32, or use_group_norm = true");
  // LeRobot sizes the pooling from a forward pass on zeros with the freshly built trunk in training
  // mode; that pass also updates BatchNorm's running statistics (running_var 0.9,
  // num_batches_tracked 1 from scratch), which is repeated here so a new model starts where LeRobot's does.
  torch::Tensor feature_map;
  {
    torch::NoGradGuard no_grad;
    feature_map = backbone_->forward(torch::zeros({1, image_shape[0], input_hw[0], input_hw[1]}));
  }
  pool_ = register_module("pool", SpatialSoftmax(feature_map.size(1), feature_map.size(2), feature_map.size(3),
                                                 config.spatial_softmax_num_keypoints));
  feature_dim_ = config.spatial_softmax_num_keypoints * 2;
  out_ = register_module("out", torch::nn::Linear(config.spatial_softmax_num_keypoints * 2, feature_dim_));
}

torch::Tensor DiffusionRgbEncoderImpl::crop(const torch::Tensor& x) const {
  const int64_t height = x.size(-2), width = x.size(-1);
  const int64_t crop_h = (*crop_shape_)[0], crop_w = (*crop_shape_)[1];
  if (crop_h > height || crop_w > width)
    throw util::DataError("policy 'diffusion': crop " + std::to_string(crop_h) + "x" + std::to_string(crop_w) +
                          " is larger than the " + std::to_string(height) + "x" + std::to_string(width) + " image");
  int64_t top = 0, left = 0;
  if (is_training() && crop_is_random_) {
    // torchvision RandomCrop.get_params: no draw when the crop is the whole image, else the top
    // then the left offset, each torch.randint(0, n + 1, (1,)), one offset for the whole batch.
    if (crop_h != height || crop_w != width) {
      top = torch::randint(0, height - crop_h + 1, {1}).item<int64_t>();
      left = torch::randint(0, width - crop_w + 1, {1}).item<int64_t>();
    }
  } else {
    top = round_half_even_of_half(height - crop_h);
    left = round_half_even_of_half(width - crop_w);
  }
  return x.slice(-2, top, top + crop_h).slice(-1, left, left + crop_w);
}

torch::Tensor DiffusionRgbEncoderImpl::forward(const torch::Tensor& x_in) {
  auto x = x_in;
  if (resize_shape_ && (x.size(-2) != (*resize_shape_)[0] || x.size(-1) != (*resize_shape_)[1]))
    x = torch::nn::functional::interpolate(x, torch::nn::functional::InterpolateFuncOptions()
                                                  .size(*resize_shape_)
                                                  .mode(torch::kBilinear)
                                                  .align_corners(false)
                                                  .antialias(true));
  if (crop_shape_) x = crop(x);
  x = torch::flatten(pool_->forward(backbone_->forward(x)), 1);
  return torch::relu(out_->forward(x));
}

}  // namespace lrhost::policy::diffusion
