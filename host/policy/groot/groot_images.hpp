// GR00T N1.7's image chain as batched tensor functions: the pack step's float -> uint8 conversion,
// GrootN17VLMEncodeStep's default (torch, non-albumentations) geometry `_transform_n1_7_image_for_vlm_torch`
// (LeRobot 0.6.1 processor_groot.py), and transformers 5.5.4's Qwen2VLImageProcessor (torchvision
// backend) that turns the frames into `pixel_values` / `image_grid_thw`. Images are (N, C, H, W) so a
// GPU can run a whole batch; each result equals LeRobot's per-frame one on the same device.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace lrhost::policy::groot {

// The pack step's `_to_uint8_np_bthwc` cast: floating images become (clamp(0, 1)·255).to(uint8) —
// truncation, not rounding; uint8 images pass through; other dtypes are refused (DataError).
torch::Tensor groot_images_to_uint8(const torch::Tensor& images);

// torchvision.transforms.v2.functional.resize(BICUBIC, antialias=True) of uint8 (N, C, H, W) to
// (height, width): unchanged when the size already matches; on the CPU LibTorch's native uint8
// antialiased bicubic kernel (torchvision takes that path for BICUBIC on CPU); elsewhere float32 ->
// interpolate -> clamp(0, 255) -> round -> uint8 (its GPU path). The two are NOT equal: the uint8 kernel
// rounds and clamps between its horizontal and vertical passes (up to 24 levels apart on noise), so
// parity needs the device LeRobot ran the VLM step on (its `device`, i.e. config.device).
torch::Tensor groot_resize_bicubic_uint8(const torch::Tensor& images, int64_t height, int64_t width);

// GrootN17VLMEncodeStep's geometry fields (make_groot_pre_post_processors: target 256², crop 230²,
// the rest unset, for a new embodiment).
struct GrootImageGeometry {
  int64_t target_height = 256, target_width = 256;  // image_target_size
  std::optional<int64_t> crop_height = 230;         // image_crop_size[0] (only its first entry is read)
  std::optional<int64_t> shortest_image_edge;       // the square resize edge; target_height when unset
  std::optional<double> crop_fraction;              // crop_height / target_height when unset
  bool letter_box_transform = false;                // zero-pad to a square first
};

// `_transform_n1_7_image_for_vlm_torch` on uint8 (N, C, H, W): optional letterbox, resize to the square
// [e, e] (aspect ratio not kept), centre crop of round(e·f) with the offset floored (when 0 < f < 1),
// resize to the target when the crop is not already that size.
torch::Tensor groot_transform_images_for_vlm(const torch::Tensor& images, const GrootImageGeometry& geometry);

// Qwen2VLImageProcessor's settings, as the checkpoint's preprocessor_config.json gives them. Defaults
// are the Qwen3-VL values GR00T N1.7 uses at full size (not the class's Qwen2-VL defaults).
struct QwenImageProcessorConfig {
  int64_t patch_size = 16;
  int64_t merge_size = 2;
  int64_t temporal_patch_size = 2;
  int64_t min_pixels = 65536;     // size.shortest_edge
  int64_t max_pixels = 16777216;  // size.longest_edge
  std::vector<double> image_mean{0.5, 0.5, 0.5};
  std::vector<double> image_std{0.5, 0.5, 0.5};
  double rescale_factor = 1.0 / 255.0;
  bool do_resize = true, do_rescale = true, do_normalize = true;
};

// transformers' qwen2_vl smart_resize: (height, width) rounded to multiples of `factor` and brought
// into [min_pixels, max_pixels] keeping the aspect ratio; DataError for an aspect ratio above 200.
std::pair<int64_t, int64_t> qwen2vl_smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                                 int64_t max_pixels);

struct QwenPixelValues {
  torch::Tensor pixel_values;    // (N·grid_t·grid_h·grid_w, C·temporal·patch·patch) float32
  torch::Tensor image_grid_thw;  // (N, 3) int64: grid_t, grid_h, grid_w of each image
};

// Qwen2VLImageProcessor._preprocess on N single-frame images (N, C, H, W) uint8: smart_resize (the
// bicubic resize above when it changes the size), the fused rescale + normalise
// (x - mean/rescale)/(std/rescale) in float32, the last frame repeated to temporal_patch_size, and the
// patchify in the processor's (t, h/m, w/m, m, m, C, t', p, p) order.
QwenPixelValues qwen2vl_preprocess_images(const torch::Tensor& images, const QwenImageProcessorConfig& config);

}  // namespace lrhost::policy::groot
