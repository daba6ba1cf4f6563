// Diffusion Policy's training FLOPs per sample, in the order the training forward runs
// (diffusion_model.cpp, rgb_encoder.cpp, unet1d.cpp): every camera of every observation step through
// the ResNet-18 trunk (at its input size after resize and crop), the spatial-softmax keypoints and the
// `out` projection; then the 1-D U-Net over the horizon: the step encoder, the residual blocks (two
// convolutions, the FiLM projection of the conditioning, a 1x1 skip convolution where the width
// changes), the strided downsampling and the transposed-convolution upsampling on every decoder level
// (LeRobot's), and the final block and projection. Everything trains; the pixels, the state and the
// noisy actions need no gradient, so the U-Net's first convolutions compute only weight gradients.
#include "host/policy/diffusion/diffusion_flops.hpp"

#include <utility>
#include <vector>

#include "host/policy/training_flops.hpp"
#include "host/policy/vision/resnet18.hpp"
#include "host/policy/vision/resnet18_flops.hpp"

namespace lrhost::policy::diffusion {
namespace {

struct UnetCounter {
  TrainingFlops& flops;
  double kernel, cond_dim;
  bool film_scale;

  // A convolution over `length` steps (or a linear layer on one row) that trains.
  void conv(double length, double in, double out, bool input_grad) {
    flops.matmul(length, in, out, /*weight_trains=*/true, input_grad);
  }
  void residual_block(double length, int64_t in, int64_t out, bool input_grad) {
    conv(length, static_cast<double>(in) * kernel, static_cast<double>(out), input_grad);
    conv(1, cond_dim, static_cast<double>(film_scale ? 2 * out : out), true);  // cond_encoder
    conv(length, static_cast<double>(out) * kernel, static_cast<double>(out), true);
    if (in != out) conv(length, static_cast<double>(in), static_cast<double>(out), input_grad);  // residual_conv
  }
};

}  // namespace

double diffusion_training_flops_per_sample(const DiffusionConfig& config, const DiffusionModelImpl& model) {
  TrainingFlops flops;
  const auto& encoders = model.rgb_encoders();
  const auto cameras = config.image_features();
  const double keypoints = static_cast<double>(config.spatial_softmax_num_keypoints);
  for (std::size_t camera = 0; camera < cameras.size(); ++camera) {
    const auto& encoder = config.use_separate_rgb_encoder_per_camera ? encoders.at(camera) : encoders.front();
    const auto [height, width] = encoder->trunk_input_size();
    for (int64_t step = 0; step < config.n_obs_steps; ++step) {
      const auto [map_height, map_width] = vision::count_resnet18_flops(flops, height, width, true);
      const double positions = static_cast<double>(map_height * map_width);
      flops.matmul(positions, vision::ResNet18Impl::kOutChannels, keypoints, true, true);  // pool.nets, a 1x1 conv
      flops.matmul(keypoints, positions, 2, false, true);         // softmax weights x the fixed grid
      flops.matmul(1, 2 * keypoints, 2 * keypoints, true, true);  // out
    }
  }

  const int64_t embed = config.diffusion_step_embed_dim;
  UnetCounter unet{flops, static_cast<double>(config.kernel_size), static_cast<double>(embed + model.global_cond_dim()),
                   config.use_film_scale_modulation};
  unet.conv(1, static_cast<double>(embed), static_cast<double>(4 * embed), false);  // the step's sinusoid
  unet.conv(1, static_cast<double>(4 * embed), static_cast<double>(embed), true);

  const auto& dims = config.down_dims;
  const int64_t action_dim = config.action_feature()->shape.at(0);
  std::vector<std::pair<int64_t, int64_t>> in_out{{action_dim, dims.front()}};
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) in_out.emplace_back(dims[i], dims[i + 1]);
  int64_t length = config.horizon;
  for (std::size_t level = 0; level < in_out.size(); ++level) {
    const auto [in, out] = in_out[level];
    unet.residual_block(static_cast<double>(length), in, out, level > 0);
    unet.residual_block(static_cast<double>(length), out, out, true);
    if (level + 1 < in_out.size()) {  // Conv1d(out, out, 3, stride 2, padding 1)
      length = (length - 1) / 2 + 1;
      unet.conv(static_cast<double>(length), static_cast<double>(3 * out), static_cast<double>(out), true);
    }
  }
  for (int i = 0; i < 2; ++i) unet.residual_block(static_cast<double>(length), dims.back(), dims.back(), true);
  for (std::size_t level = in_out.size() - 1; level >= 1; --level) {
    const auto [out, in] = in_out[level];
    unet.residual_block(static_cast<double>(length), 2 * in, out, true);
    unet.residual_block(static_cast<double>(length), out, out, true);
    // ConvTranspose1d(out, out, 4, stride 2, padding 1): each input step meets 4 output taps.
    unet.conv(static_cast<double>(length), static_cast<double>(out), static_cast<double>(4 * out), true);
    length *= 2;
  }
  const double first = static_cast<double>(dims.front());
  unet.conv(static_cast<double>(length), first * unet.kernel, first, true);  // final block
  unet.conv(static_cast<double>(length), first, static_cast<double>(action_dim), true);
  return flops.total();
}

}  // namespace lrhost::policy::diffusion
