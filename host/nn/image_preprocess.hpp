// Image preprocessing of SmolVLA-style VLAs before the SigLIP tower (LeRobot 0.6.1
// policies/common/vla_utils.py resize_with_pad and SmolVLAPolicy.prepare_images): aspect-preserving
// bilinear resize into a target box, padding on the LEFT and TOP, then the [0,1] -> [-1,1] scaling
// SigLIP expects. Works on any device and float dtype; the batch stays batched.
#pragma once
#include <torch/torch.h>

namespace lrhost::nn {

// (B, C, H, W) float -> (B, C, height, width). Unchanged (the same tensor) when already that size;
// else ratio = max(W/width, H/height), new size = (int(H/ratio), int(W/ratio)) truncated,
// F.interpolate(bilinear, align_corners=False, no antialias), then `pad_value` rows on top and
// columns on the left. Throws util::Error for a non-4-D or non-float input or a non-positive size.
torch::Tensor resize_with_pad(const torch::Tensor& images, int64_t height, int64_t width, double pad_value);

// SmolVLA's prepare_images for one camera: resize_with_pad(images, height, width, 0) * 2 - 1, so
// padding ends up at -1.
torch::Tensor smolvla_prepare_image(const torch::Tensor& images, int64_t height, int64_t width);

}  // namespace lrhost::nn
