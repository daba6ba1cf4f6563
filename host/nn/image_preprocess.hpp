// Image preprocessing of VLAs before their SigLIP tower (LeRobot 0.6.1 policies/common/vla_utils.py
// resize_with_pad / resize_with_pad_torch, and the prepare_images of SmolVLA and pi0): an
// aspect-preserving bilinear resize into a target box, zero padding either on the LEFT and TOP
// (SmolVLA, XVLA) or centred (openpi: pi0, pi05), then the [0,1] -> [-1,1] scaling SigLIP expects.
// Works on any device and float dtype; the batch stays batched.
#pragma once
#include <torch/torch.h>

namespace lrhost::nn {

// Where the padding goes when the resized image is smaller than the box.
enum class PadPlacement {
  top_left,  // resize_with_pad: all padding rows on top, all padding columns on the left
  centered,  // resize_with_pad_torch: (box − size) // 2 before, the rest (one more when odd) after
};

struct ResizeWithPadOptions {
  PadPlacement placement = PadPlacement::top_left;
  // Clamp the resized pixels to [0, 1] before padding, as resize_with_pad_torch does for fp32 images
  // (bilinear interpolation does not overshoot, so this only matters for inputs outside [0, 1]).
  bool clamp_to_unit = false;
};

// (B, C, H, W) float -> (B, C, height, width). Unchanged (the same tensor, not clamped) when already
// that size, as both LeRobot callers skip the resize then; else ratio = max(W/width, H/height), new
// size = (int(H/ratio), int(W/ratio)) truncated, F.interpolate(bilinear, align_corners=False, no
// antialias), the optional clamp, then `pad_value` rows and columns placed per `options`. Throws
// util::Error for a non-4-D or non-float input or a non-positive size.
torch::Tensor resize_with_pad(const torch::Tensor& images, int64_t height, int64_t width, double pad_value,
                              const ResizeWithPadOptions& options = {});

// resize_with_pad(images, height, width, 0, options) · 2 − 1: [0, 1] pixels to SigLIP's [−1, 1], so
// the padding ends up at −1 (SmolVLA's and pi0's per-camera image preparation).
torch::Tensor resize_with_pad_signed(const torch::Tensor& images, int64_t height, int64_t width,
                                     const ResizeWithPadOptions& options = {});

}  // namespace lrhost::nn
