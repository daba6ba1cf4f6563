// resize_with_pad in its two padding placements and the [-1, 1] scaling (see image_preprocess.hpp).
#include "host/nn/image_preprocess.hpp"

#include <algorithm>

#include "host/util/error.hpp"

namespace lrhost::nn {

torch::Tensor resize_with_pad(const torch::Tensor& images, int64_t height, int64_t width, double pad_value,
                              const ResizeWithPadOptions& options) {
  if (images.dim() != 4)
    throw util::Error("resize_with_pad: expected images (B, C, H, W), got " + c10::str(images.sizes()));
  if (!images.is_floating_point())
    throw util::Error("resize_with_pad: expected float images in [0, 1], got dtype " +
                      std::string(c10::toString(images.scalar_type())));
  if (height <= 0 || width <= 0)
    throw util::Error("resize_with_pad: target size must be positive, got " + std::to_string(height) + "x" +
                      std::to_string(width));
  const int64_t current_height = images.size(2), current_width = images.size(3);
  if (current_height == height && current_width == width) return images;
  if (current_height == 0 || current_width == 0)
    throw util::Error("resize_with_pad: empty image " + c10::str(images.sizes()));
  // Python float arithmetic and int() truncation, as in LeRobot.
  const double ratio = std::max(static_cast<double>(current_width) / static_cast<double>(width),
                                static_cast<double>(current_height) / static_cast<double>(height));
  const auto resized_height = static_cast<int64_t>(static_cast<double>(current_height) / ratio);
  const auto resized_width = static_cast<int64_t>(static_cast<double>(current_width) / ratio);
  if (resized_height == 0 || resized_width == 0)
    throw util::Error("resize_with_pad: image " + c10::str(images.sizes()) + " would shrink to " +
                      std::to_string(resized_height) + "x" + std::to_string(resized_width) + " in a " +
                      std::to_string(height) + "x" + std::to_string(width) + " box");
  // F.interpolate(size=...) without scale factors = upsample_bilinear2d with no scales.
  auto resized = at::upsample_bilinear2d(images, {resized_height, resized_width}, /*align_corners=*/false, std::nullopt,
                                         std::nullopt);
  if (options.clamp_to_unit) resized = resized.clamp(0.0, 1.0);
  const int64_t pad_height = std::max<int64_t>(0, height - resized_height);
  const int64_t pad_width = std::max<int64_t>(0, width - resized_width);
  switch (options.placement) {
    case PadPlacement::top_left:
      // F.pad(x, (pad_width, 0, pad_height, 0)): (left, right, top, bottom).
      return at::constant_pad_nd(resized, {pad_width, 0, pad_height, 0}, pad_value);
    case PadPlacement::centered: {
      // divmod(pad, 2): the odd pixel goes after (right, bottom).
      const int64_t top = pad_height / 2, left = pad_width / 2;
      return at::constant_pad_nd(resized, {left, pad_width - left, top, pad_height - top}, pad_value);
    }
  }
  throw util::Error("resize_with_pad: unknown padding placement");
}

torch::Tensor resize_with_pad_signed(const torch::Tensor& images, int64_t height, int64_t width,
                                     const ResizeWithPadOptions& options) {
  return resize_with_pad(images, height, width, 0.0, options) * 2.0 - 1.0;
}

}  // namespace lrhost::nn
