// ResNet-18 trunk FLOPs; see resnet18_flops.hpp. The geometry is resnet18.cpp's: a 7x7/2 stem, a 3x3/2
// max pool, then four stages of two basic blocks (3x3 convolutions; the first block of stages 2-4
// strides by 2 and adds a 1x1/2 downsample on its skip path).
#include "host/policy/vision/resnet18_flops.hpp"

#include "host/policy/vision/resnet18.hpp"

namespace lrhost::policy::vision {
namespace {

int64_t conv_out(int64_t size, int64_t kernel, int64_t stride, int64_t padding) {
  return (size + 2 * padding - kernel) / stride + 1;
}

struct TrunkCounter {
  TrainingFlops& flops;
  bool trains;
  int64_t height, width;

  // A convolution of the current map into `out` channels; moves the map to its output size.
  void conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, bool input_needs_grad) {
    height = conv_out(height, kernel, stride, padding);
    width = conv_out(width, kernel, stride, padding);
    flops.matmul(static_cast<double>(height * width), static_cast<double>(in * kernel * kernel),
                 static_cast<double>(out), trains, input_needs_grad);
  }

  void stage(int64_t in, int64_t out, int64_t stride) {
    const int64_t block_height = height, block_width = width;
    conv(in, out, 3, stride, 1, trains);
    conv(out, out, 3, 1, 1, trains);
    if (stride != 1 || in != out) {  // the downsample reads the block's input
      const int64_t out_height = height, out_width = width;
      height = block_height, width = block_width;
      conv(in, out, 1, stride, 0, trains);
      height = out_height, width = out_width;
    }
    conv(out, out, 3, 1, 1, trains);
    conv(out, out, 3, 1, 1, trains);
  }
};

}  // namespace

std::pair<int64_t, int64_t> count_resnet18_flops(TrainingFlops& flops, int64_t height, int64_t width, bool trains) {
  TrunkCounter trunk{flops, trains, height, width};
  trunk.conv(3, 64, 7, 2, 3, /*input_needs_grad=*/false);  // the pixels
  trunk.height = conv_out(trunk.height, 3, 2, 1);          // max pool
  trunk.width = conv_out(trunk.width, 3, 2, 1);
  trunk.stage(64, 64, 1);
  trunk.stage(64, 128, 2);
  trunk.stage(128, 256, 2);
  trunk.stage(256, ResNet18Impl::kOutChannels, 2);
  return {trunk.height, trunk.width};
}

}  // namespace lrhost::policy::vision
