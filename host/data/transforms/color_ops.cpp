// The per-op pixel math of the image augmentations. Each op is written with the same tensor
// operations in the same order as torchvision v2's float kernels (same rounding of scalars to the
// image dtype, same clamps, same conv and grid-sample calls), so results agree bit for bit on the
// same LibTorch build, not merely to a tolerance; comments note where that ordering matters.
#include "host/data/transforms/color_ops.hpp"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "host/util/error.hpp"

namespace lrhost::data {

namespace {

using torch::indexing::Ellipsis;
using torch::indexing::Slice;

// torchvision refuses anything but 1 or 3 channels for the colour ops; so do we, naming the op.
int64_t checked_channels(const torch::Tensor& image, const char* op) {
  if (image.dim() < 3 || !image.is_floating_point())
    throw util::DataError(std::string(op) + ": expected a float image [..., C, H, W], got " +
                          std::to_string(image.dim()) + " dims of " + std::string(c10::toString(image.scalar_type())));
  const int64_t channels = image.size(-3);
  if (channels != 1 && channels != 3)
    throw util::DataError(std::string(op) + ": expected 1 or 3 channels, got " + std::to_string(channels));
  return channels;
}

void check_non_negative(double factor, const char* op) {
  if (!(factor >= 0.0)) throw util::DataError(std::string(op) + ": factor must be >= 0, got " + std::to_string(factor));
}

// ratio * a + (1 - ratio) * b, clamped to the float image range [0, 1] (torchvision's _blend).
torch::Tensor blend(const torch::Tensor& a, const torch::Tensor& b, double ratio) {
  return a.mul(ratio).add_(b, 1.0 - ratio).clamp_(0.0, 1.0);
}

// Hue in turns [0, 1), saturation and value, stacked on dim -3. Pixels with max == min get hue and
// saturation 0; the denominators are replaced by 1 there so that no NaN is ever produced.
torch::Tensor rgb_to_hsv(const torch::Tensor& rgb) {
  const auto r = rgb.select(-3, 0), g = rgb.select(-3, 1), b = rgb.select(-3, 2);
  const auto [minc, maxc] = torch::aminmax(rgb, -3);
  const auto flat = maxc == minc;
  const auto spread = maxc - minc;
  const auto one = torch::ones_like(maxc);
  const auto sat = spread / torch::where(flat, one, maxc);
  const auto divisor = torch::where(flat, one, spread);
  const auto rc = (maxc - r) / divisor, gc = (maxc - g) / divisor, bc = (maxc - b) / divisor;
  // Exactly one sector term is chosen per pixel; red wins ties, then green (Pillow's rule).
  const auto max_is_r = maxc == r, max_is_g = maxc == g;
  const auto h_r = bc - gc;
  const auto h_g = (rc + 2.0) - bc;
  const auto h_b = (gc + 4.0) - rc;
  auto hue = torch::where(max_is_r, h_r, torch::where(max_is_g, h_g, h_b));
  // Multiply by the float 1/6 (not divide by 6) and wrap through +1: torchvision's rounding.
  hue = hue.mul(1.0 / 6.0).add_(1.0).fmod_(1.0);
  return torch::stack({hue, sat, maxc}, -3);
}

torch::Tensor hsv_to_rgb(const torch::Tensor& hsv) {
  const auto h = hsv.select(-3, 0), s = hsv.select(-3, 1), v = hsv.select(-3, 2);
  const auto h6 = h.mul(6);
  const auto sector_f = torch::floor(h6);
  const auto frac = h6 - sector_f;
  const auto sector = sector_f.to(torch::kInt32).remainder(6).to(torch::kLong);
  const auto s_frac = s * frac;
  const auto one_minus_s = 1.0 - s;
  const auto q = (1.0 - s_frac).mul_(v).clamp_(0.0, 1.0);
  const auto t = (s_frac + one_minus_s).mul_(v).clamp_(0.0, 1.0);
  const auto p = (one_minus_s * v).clamp_(0.0, 1.0);
  // Candidates 0..3 = v, p, q, t; for each of the six hue sectors, which one each of R, G, B takes.
  const auto candidates = torch::stack({v, p, q, t}, 0);
  static const int64_t kPick[3][6] = {{0, 2, 1, 1, 3, 0}, {3, 0, 0, 2, 1, 1}, {1, 1, 3, 0, 0, 2}};
  std::vector<torch::Tensor> channels;
  for (const auto& row : kPick) {
    const auto lut = torch::tensor(std::vector<int64_t>(std::begin(row), std::end(row)), torch::kLong);
    channels.push_back(candidates.gather(0, lut.index({sector}).unsqueeze(0)).squeeze(0));
  }
  return torch::stack(channels, -3);
}

}  // namespace

torch::Tensor rgb_to_grayscale(const torch::Tensor& image) {
  if (checked_channels(image, "rgb_to_grayscale") == 1) return image.clone();
  const auto r = image.select(-3, 0), g = image.select(-3, 1), b = image.select(-3, 2);
  return r.mul(0.2989).add_(g, 0.587).add_(b, 0.114).unsqueeze(-3);
}

torch::Tensor adjust_brightness(const torch::Tensor& image, double factor) {
  checked_channels(image, "adjust_brightness");
  check_non_negative(factor, "adjust_brightness");
  return image.mul(factor).clamp_(0.0, 1.0);
}

torch::Tensor adjust_contrast(const torch::Tensor& image, double factor) {
  const int64_t channels = checked_channels(image, "adjust_contrast");
  check_non_negative(factor, "adjust_contrast");
  const auto gray = channels == 3 ? rgb_to_grayscale(image) : image;
  // One mean per image: over channel and both spatial dims, never across frames of a window.
  const auto mean = gray.mean({-3, -2, -1}, /*keepdim=*/true);
  return blend(image, mean, factor);
}

torch::Tensor adjust_saturation(const torch::Tensor& image, double factor) {
  const int64_t channels = checked_channels(image, "adjust_saturation");
  check_non_negative(factor, "adjust_saturation");
  if (channels == 1) return image;  // torchvision (and PIL) leave grayscale alone
  return blend(image, rgb_to_grayscale(image), factor);
}

torch::Tensor adjust_hue(const torch::Tensor& image, double factor) {
  const int64_t channels = checked_channels(image, "adjust_hue");
  if (!(factor >= -0.5 && factor <= 0.5))
    throw util::DataError("adjust_hue: factor must be in [-0.5, 0.5], got " + std::to_string(factor));
  if (channels == 1 || image.numel() == 0) return image;
  // torchvision does the HSV round trip in float32 whatever the input float type.
  auto hsv = rgb_to_hsv(image.to(torch::kFloat));
  auto hue = hsv.select(-3, 0);
  hue.add_(factor).remainder_(1.0);
  return hsv_to_rgb(hsv).to(image.scalar_type());
}

torch::Tensor adjust_sharpness(const torch::Tensor& image, double factor) {
  const int64_t channels = checked_channels(image, "adjust_sharpness");
  check_non_negative(factor, "adjust_sharpness");
  const int64_t height = image.size(-2), width = image.size(-1);
  if (image.numel() == 0 || height <= 2 || width <= 2) return image;

  const auto shape = image.sizes().vec();
  // conv2d takes [C,H,W] or [N,C,H,W]; deeper batches are folded into N and unfolded after.
  auto work = image.dim() > 4 ? image.reshape({-1, channels, height, width}) : image;
  const double a = 1.0 / 13.0, b = 5.0 / 13.0;
  const auto kernel = torch::tensor({a, a, a, a, b, a, a, a, a}, torch::TensorOptions().dtype(image.scalar_type()))
                          .view({1, 1, 3, 3})
                          .expand({channels, 1, 3, 3});
  auto output = work.to(image.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
  auto blurred = torch::conv2d(output, kernel, /*bias=*/torch::Tensor(), torch::IntArrayRef{1, 1},
                               torch::IntArrayRef{0, 0}, torch::IntArrayRef{1, 1}, channels);
  // Only the interior is blended: the 3x3 kernel has no full support on the border pixels.
  auto interior = output.index({Ellipsis, Slice(1, -1), Slice(1, -1)});
  interior.add_(blurred.sub_(interior), 1.0 - factor);
  output.clamp_(0.0, 1.0);
  return image.dim() > 4 ? output.reshape(shape) : output;
}

torch::Tensor affine(const torch::Tensor& image, double angle_deg, std::pair<double, double> translate_px, double scale,
                     std::pair<double, double> shear_deg) {
  if (image.dim() < 3 || !image.is_floating_point())
    throw util::DataError("affine: expected a float image [..., C, H, W]");
  if (!(scale > 0.0)) throw util::DataError("affine: scale must be > 0, got " + std::to_string(scale));
  const int64_t channels = image.size(-3), height = image.size(-2), width = image.size(-1);
  if (image.numel() == 0) return image;

  // Inverse of T * C * R(angle) S(scale) Shear * C^-1 with the centre C at the image centre, which
  // is (0, 0) in the grid's centred pixel coordinates. Degrees -> radians as Python's math.radians.
  constexpr double kDegToRad = std::numbers::pi / 180.0;
  const double rot = angle_deg * kDegToRad, sx = shear_deg.first * kDegToRad, sy = shear_deg.second * kDegToRad;
  const double cx = 0.0, cy = 0.0;
  const double cx_tx = cx + translate_px.first, cy_ty = cy + translate_px.second;
  const double cos_sy = std::cos(sy), tan_sx = std::tan(sx);
  const double ra = std::cos(rot - sy) / cos_sy;
  const double rb = -(ra * tan_sx + std::sin(rot));
  const double rc = std::sin(rot - sy) / cos_sy;
  const double rd = std::cos(rot) - rc * tan_sx;
  double m[6] = {rd / scale, -rb / scale, 0.0, -rc / scale, ra / scale, 0.0};
  m[2] += cx - m[0] * cx_tx - m[1] * cy_ty;
  m[5] += cy - m[3] * cx_tx - m[4] * cy_ty;

  const auto opts = torch::TensorOptions().dtype(image.scalar_type());
  const auto theta = torch::tensor({m[0], m[1], m[2], m[3], m[4], m[5]}, opts).view({1, 2, 3});
  // Output pixel centres in centred coordinates, mapped through theta and normalised to [-1, 1] by
  // the half sizes (the normalisation comes after theta, unlike torch's affine_grid).
  auto base = torch::empty({1, height, width, 3}, opts);
  // The coordinate ramps are float32 whatever the image type, as torchvision builds them.
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  base.select(-1, 0).copy_(torch::linspace((1.0 - width) * 0.5, (width - 1.0) * 0.5, width, f32));
  base.select(-1, 1).copy_(torch::linspace((1.0 - height) * 0.5, (height - 1.0) * 0.5, height, f32).unsqueeze(-1));
  base.select(-1, 2).fill_(1);
  const auto rescaled = theta.transpose(1, 2).div(torch::tensor({0.5 * width, 0.5 * height}, opts));
  auto grid = base.view({1, height * width, 3}).bmm(rescaled).view({1, height, width, 2});

  auto flat = image.reshape({-1, channels, height, width});
  grid = grid.expand({flat.size(0), -1, -1, -1});
  // Nearest sampling with zero padding: pixels mapped from outside the image become 0, which is
  // what torchvision's fill=0 mask produces for nearest interpolation.
  auto out = torch::grid_sampler(flat, grid, /*interpolation=nearest*/ 1, /*padding=zeros*/ 0,
                                 /*align_corners=*/false);
  return out.reshape(image.sizes());
}

torch::Tensor crop(const torch::Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width) {
  if (image.dim() < 3) throw util::DataError("crop: expected an image [..., C, H, W]");
  if (top < 0 || left < 0 || height < 1 || width < 1 || top + height > image.size(-2) || left + width > image.size(-1))
    throw util::DataError("crop: window (top " + std::to_string(top) + ", left " + std::to_string(left) + ", " +
                          std::to_string(height) + "x" + std::to_string(width) + ") does not fit in an image of " +
                          std::to_string(image.size(-2)) + "x" + std::to_string(image.size(-1)));
  return image.index({Ellipsis, Slice(top, top + height), Slice(left, left + width)});
}

std::pair<int64_t, int64_t> center_crop_offsets(int64_t image_h, int64_t image_w, int64_t height, int64_t width) {
  // Python's round() rounds ties to even, as nearbyint does in the default rounding mode.
  return {static_cast<int64_t>(std::nearbyint(static_cast<double>(image_h - height) / 2.0)),
          static_cast<int64_t>(std::nearbyint(static_cast<double>(image_w - width) / 2.0))};
}

torch::Tensor resize_bilinear(const torch::Tensor& image, int64_t height, int64_t width) {
  if (image.dim() < 3 || !image.is_floating_point())
    throw util::DataError("resize: expected a float image [..., C, H, W]");
  if (height < 1 || width < 1) throw util::DataError("resize: target size must be positive");
  const int64_t channels = image.size(-3);
  if (image.size(-2) == height && image.size(-1) == width) return image;
  auto flat = image.reshape({-1, channels, image.size(-2), image.size(-1)});
  namespace F = torch::nn::functional;
  auto out = F::interpolate(flat, F::InterpolateFuncOptions()
                                      .size(std::vector<int64_t>{height, width})
                                      .mode(torch::kBilinear)
                                      .align_corners(false));
  auto shape = image.sizes().vec();
  shape[shape.size() - 2] = height;
  shape[shape.size() - 1] = width;
  return out.reshape(shape);
}

}  // namespace lrhost::data
