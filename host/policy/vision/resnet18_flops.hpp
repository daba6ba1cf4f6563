// ResNet-18's trunk (conv1 .. layer4, as ResNet18Impl::forward runs it) in training_flops.hpp's count:
// each convolution is a matmul of (output pixels) x (C_in·k·k) x (C_out). ACT and Diffusion feed
// their cameras through it.
#pragma once
#include <cstdint>
#include <utility>

#include "host/policy/training_flops.hpp"

namespace lrhost::policy::vision {

// Adds one image of `height` x `width` pixels through the trunk to `flops`; `trains`: the trunk's
// weights train (then every convolution's input needs its gradient except the first's, the pixels).
// Returns the feature map's (height, width).
std::pair<int64_t, int64_t> count_resnet18_flops(TrainingFlops& flops, int64_t height, int64_t width, bool trains);

}  // namespace lrhost::policy::vision
