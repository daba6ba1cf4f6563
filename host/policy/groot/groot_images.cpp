// GR00T N1.7's image chain (see groot_images.hpp). References: LeRobot 0.6.1 processor_groot.py,
// torchvision 0.26 transforms/v2/functional/_geometry.py (resize_image), transformers 5.5.4
// models/qwen2_vl/image_processing_qwen2_vl.py and image_processing_backends.py.
#include "host/policy/groot/groot_images.hpp"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "host/util/error.hpp"

namespace lrhost::policy::groot {
namespace {

std::string images_shape_text(const torch::Tensor& t) {
  std::string text = "(";
  for (int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + std::to_string(t.size(i));
  return text + ")";
}

void images_require_uint8_nchw(const torch::Tensor& images, const char* what) {
  if (images.dim() != 4 || images.scalar_type() != torch::kUInt8)
    throw util::DataError(std::string(what) + " needs uint8 images (N, C, H, W), got " +
                          std::string(c10::toString(images.scalar_type())) + " " + images_shape_text(images));
}

// Python's int(round(x)) for the crop size: round half to even (nearbyint in the default rounding mode).
int64_t images_python_round(double x) {
  return static_cast<int64_t>(std::nearbyint(x));
}

}  // namespace

torch::Tensor groot_images_to_uint8(const torch::Tensor& images) {
  // processor_groot.py:1344-1347.
  if (images.scalar_type() == torch::kUInt8) return images;
  if (!images.is_floating_point())
    throw util::DataError("GR00T camera images must be float in [0, 1] or uint8, got " +
                          std::string(c10::toString(images.scalar_type())));
  return images.clamp(0, 1).mul(255.0).to(torch::kUInt8);
}

torch::Tensor groot_resize_bicubic_uint8(const torch::Tensor& images, int64_t height, int64_t width) {
  // torchvision resize_image (_geometry.py:263-337): same size -> the input itself; BICUBIC on a CPU
  // uint8 tensor stays uint8 (_do_native_uint8_resize_on_cpu); otherwise cast, clamp, round, cast back.
  images_require_uint8_nchw(images, "GR00T bicubic resize");
  if (height <= 0 || width <= 0)
    throw util::DataError("GR00T bicubic resize target must be positive, got " + std::to_string(height) + "x" +
                          std::to_string(width));
  if (images.size(2) == height && images.size(3) == width) return images;
  if (images.numel() == 0) return images.new_empty({images.size(0), images.size(1), height, width});
  if (images.is_cpu()) return at::_upsample_bicubic2d_aa(images, {height, width}, false, std::nullopt, std::nullopt);
  auto out = at::_upsample_bicubic2d_aa(images.to(torch::kFloat32), {height, width}, false, std::nullopt, std::nullopt);
  return out.clamp_(0, 255).round_().to(torch::kUInt8);
}

torch::Tensor groot_transform_images_for_vlm(const torch::Tensor& images_in, const GrootImageGeometry& geometry) {
  // _transform_n1_7_image_for_vlm_torch (processor_groot.py:1471-1528).
  images_require_uint8_nchw(images_in, "GR00T VLM image transform");
  if (geometry.target_height <= 0 || geometry.target_width <= 0)
    throw util::ConfigError("GR00T image_target_size must be positive, got [" + std::to_string(geometry.target_height) +
                            ", " + std::to_string(geometry.target_width) + "]");
  torch::Tensor images = images_in;
  const int64_t height = images.size(2), width = images.size(3);
  if (geometry.letter_box_transform && height != width) {
    const int64_t edge = std::max(height, width);
    const int64_t left = (edge - width) / 2, top = (edge - height) / 2;
    images = torch::constant_pad_nd(images, {left, edge - width - left, top, edge - height - top}, 0);
  }
  const int64_t edge = geometry.shortest_image_edge.value_or(geometry.target_height);
  if (edge <= 0) throw util::ConfigError("GR00T shortest_image_edge must be positive, got " + std::to_string(edge));
  images = groot_resize_bicubic_uint8(images, edge, edge);

  std::optional<double> fraction = geometry.crop_fraction;
  if (!fraction && geometry.crop_height)
    fraction = static_cast<double>(*geometry.crop_height) / static_cast<double>(geometry.target_height);
  if (fraction && *fraction > 0.0 && *fraction < 1.0) {
    // round() the size, floor the offset (the PIL helper's centre crop, not torchvision's).
    const int64_t h = images.size(2), w = images.size(3);
    const int64_t crop_h = std::max<int64_t>(1, images_python_round(static_cast<double>(h) * *fraction));
    const int64_t crop_w = std::max<int64_t>(1, images_python_round(static_cast<double>(w) * *fraction));
    const int64_t top = std::max<int64_t>(0, (h - crop_h) / 2), left = std::max<int64_t>(0, (w - crop_w) / 2);
    images = images.slice(2, top, top + crop_h).slice(3, left, left + crop_w);
  }
  return groot_resize_bicubic_uint8(images, geometry.target_height, geometry.target_width);
}

std::pair<int64_t, int64_t> qwen2vl_smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                                 int64_t max_pixels) {
  // image_processing_qwen2_vl.py:62-88, in double as Python computes it.
  if (height <= 0 || width <= 0 || factor <= 0)
    throw util::DataError("Qwen2-VL smart_resize needs a positive size and factor, got " + std::to_string(height) +
                          "x" + std::to_string(width) + " factor " + std::to_string(factor));
  const double h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
  const double ratio = static_cast<double>(std::max(height, width)) / static_cast<double>(std::min(height, width));
  if (ratio > 200)
    throw util::DataError("Qwen2-VL smart_resize: absolute aspect ratio must be smaller than 200, got " +
                          std::to_string(ratio));
  int64_t h_bar = images_python_round(h / f) * factor;
  int64_t w_bar = images_python_round(w / f) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
    h_bar = std::max(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return {h_bar, w_bar};
}

QwenPixelValues qwen2vl_preprocess_images(const torch::Tensor& images_in, const QwenImageProcessorConfig& config) {
  // Qwen2VLImageProcessor._preprocess (image_processing_qwen2_vl.py:148-232).
  images_require_uint8_nchw(images_in, "Qwen2-VL image processor");
  const int64_t patch = config.patch_size, merge = config.merge_size, temporal = config.temporal_patch_size;
  if (patch <= 0 || merge <= 0 || temporal <= 0)
    throw util::ConfigError("Qwen2-VL patch_size, merge_size and temporal_patch_size must be positive, got " +
                            std::to_string(patch) + ", " + std::to_string(merge) + ", " + std::to_string(temporal));
  const auto channels = images_in.size(1);
  if (config.do_normalize &&
      (static_cast<int64_t>(config.image_mean.size()) != channels ||
       static_cast<int64_t>(config.image_std.size()) != channels ||
       std::any_of(config.image_std.begin(), config.image_std.end(), [](double s) { return s == 0.0; })))
    throw util::ConfigError("Qwen2-VL image_mean / image_std need " + std::to_string(channels) +
                            " entries each and a non-zero std");
  torch::Tensor images = images_in;
  if (config.do_resize) {
    const auto [h, w] =
        qwen2vl_smart_resize(images.size(2), images.size(3), patch * merge, config.min_pixels, config.max_pixels);
    images = groot_resize_bicubic_uint8(images, h, w);
  }
  const int64_t height = images.size(2), width = images.size(3);
  if (height % (patch * merge) != 0 || width % (patch * merge) != 0)
    throw util::DataError(
        "Qwen2-VL image processor: image size " + std::to_string(height) + "x" + std::to_string(width) +
        " is not a multiple of patch_size * merge_size = " + std::to_string(patch * merge) + " (do_resize is off)");

  // rescale_and_normalize (image_processing_backends.py:292-331): the mean / std are float32 tensors
  // scaled by 1/rescale_factor, then (x - mean) / std on the float32 image.
  torch::Tensor patches = images;
  if (config.do_normalize) {
    const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(images.device());
    auto mean = torch::tensor(config.image_mean, options);
    auto stdev = torch::tensor(config.image_std, options);
    if (config.do_rescale) {
      mean = mean * (1.0 / config.rescale_factor);
      stdev = stdev * (1.0 / config.rescale_factor);
    }
    patches = images.to(torch::kFloat32).sub(mean.view({-1, 1, 1})).div_(stdev.view({-1, 1, 1}));
  } else if (config.do_rescale) {
    patches = images * config.rescale_factor;
  }

  // One frame per image, its last frame repeated up to a multiple of temporal_patch_size.
  patches = patches.unsqueeze(1);
  if (patches.size(1) % temporal != 0)
    patches = torch::cat({patches, patches.slice(1, -1).repeat({1, temporal - 1, 1, 1, 1})}, 1);
  const int64_t n = patches.size(0), grid_t = patches.size(1) / temporal;
  const int64_t grid_h = height / patch, grid_w = width / patch;
  patches = patches.view({n, grid_t, temporal, channels, grid_h / merge, merge, patch, grid_w / merge, merge, patch})
                .permute({0, 1, 4, 7, 5, 8, 3, 2, 6, 9})
                .reshape({n * grid_t * grid_h * grid_w, channels * temporal * patch * patch});
  auto grid = torch::tensor({grid_t, grid_h, grid_w}, torch::kInt64).repeat({n, 1});
  return {patches, grid};
}

}  // namespace lrhost::policy::groot
