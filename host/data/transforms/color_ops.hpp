// The per-op pixel math behind the image augmentations, each with its parameters given explicitly
// (no randomness here): brightness, contrast, saturation, hue, sharpness, the affine warp of
// RandomAffine, and crop/resize. Each follows torchvision v2's functional kernel for float images
// operation by operation, so a LeRobot-trained policy sees the same pixels from lrhost; tests call
// these directly with fixed factors and compare against torchvision-generated values.
// Images are float tensors [..., C, H, W] with values in [0, 1]; leading dims share the parameters.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <utility>

namespace lrhost::data {

// Luma with torchvision's weights 0.2989 R + 0.587 G + 0.114 B; keeps a channel dim of size 1.
torch::Tensor rgb_to_grayscale(const torch::Tensor& image);

// image * factor, clamped to [0, 1]. factor >= 0.
torch::Tensor adjust_brightness(const torch::Tensor& image, double factor);

// Blend with the mean luma of each image (over C, H, W), clamped. factor >= 0.
torch::Tensor adjust_contrast(const torch::Tensor& image, double factor);

// Blend with the per-pixel luma, clamped; a 1-channel image is returned as is. factor >= 0.
torch::Tensor adjust_saturation(const torch::Tensor& image, double factor);

// Rotate the hue by `factor` turns (RGB -> HSV, shift, -> RGB). factor in [-0.5, 0.5]; a
// 1-channel image is returned as is.
torch::Tensor adjust_hue(const torch::Tensor& image, double factor);

// Blend with the image smoothed by the 3x3 kernel [1 1 1; 1 5 1; 1 1 1] / 13; the 1-pixel border
// keeps its values. Images of height or width <= 2 are returned as is. factor >= 0.
torch::Tensor adjust_sharpness(const torch::Tensor& image, double factor);

// torchvision's F.affine for tensors with nearest interpolation and fill 0: rotation by
// `angle_deg` (counter-clockwise on screen as torchvision defines it) about the image centre,
// translation by (tx, ty) pixels, isotropic `scale`, shear (x, y) in degrees.
torch::Tensor affine(const torch::Tensor& image, double angle_deg, std::pair<double, double> translate_px, double scale,
                     std::pair<double, double> shear_deg);

// The window [top, top + height) x [left, left + width) of every image; must lie inside it.
torch::Tensor crop(const torch::Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width);

// torchvision's centre crop offsets: top = round((H - height) / 2), ties to even, likewise left.
std::pair<int64_t, int64_t> center_crop_offsets(int64_t image_h, int64_t image_w, int64_t height, int64_t width);

// Bilinear resize to (height, width), align_corners = false, no antialias (as torchvision's
// resize with antialias=False on tensors).
torch::Tensor resize_bilinear(const torch::Tensor& image, int64_t height, int64_t width);

}  // namespace lrhost::data
