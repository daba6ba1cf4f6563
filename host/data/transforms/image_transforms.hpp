// Training-time image augmentation with LeRobot's semantics (lerobot/transforms/transforms.py):
// a configured set of named transforms (ColorJitter, SharpnessJitter, RandomAffine, Identity), of
// which each call applies a random subset of at most max_num_transforms, drawn without
// replacement with probability proportional to the weights (LeRobot's RandomSubsetApply), each
// with its factor drawn uniformly from its range. Every random draw uses the same ATen sampling
// call, in the same order, as LeRobot + torchvision v2 do on the global generator, so a CPU
// generator seeded like Python's gives the same parameters; all randomness comes from the caller's
// generator, so runs are reproducible. An optional crop/resize follows the colour transforms.
#pragma once
#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::data {

// One named entry of ImageTransformsConfig.tfs (LeRobot's ImageTransformConfig). `ranges` holds
// LeRobot's kwargs, all pairs:
//   ColorJitter:     any of "brightness", "contrast", "saturation" (min >= 0) and "hue" (within
//                    [-0.5, 0.5]); a range equal to (1, 1) ((0, 0) for hue) is off, as in torchvision.
//   SharpnessJitter: "sharpness" (0 <= min <= max), required.
//   RandomAffine:    "degrees" (min <= max), required; optional "translate" = (max fraction of the
//                    width, of the height), each in [0, 1] (not a range); "scale" (0 < min <= max);
//                    "shear" = x shear range in degrees.
//   Identity:        nothing.
struct ImageTransformSpec {
  std::string type;
  double weight = 1.0;
  std::map<std::string, std::pair<double, double>> ranges;
};

struct ImageTransformsConfig {
  bool enable = false;
  int max_num_transforms = 3;
  bool random_order = false;
  std::map<std::string, ImageTransformSpec> tfs;
  // The listing order of `tfs` (LeRobot's dict order), which decides the order in which the chosen
  // transforms are applied when random_order is false and which index multinomial draws map to.
  // Names of tfs missing here follow in alphabetical order; names here not in tfs are an error.
  std::vector<std::string> order;

  // LeRobot's defaults: brightness (0.8, 1.2), contrast (0.8, 1.2), saturation (0.5, 1.5), hue
  // (-0.05, 0.05), sharpness (0.5, 1.5), affine (degrees (-5, 5), translate (0.05, 0.05)), all of
  // weight 1, in that order; enable false, max_num_transforms 3, random_order false.
  static ImageTransformsConfig lerobot_defaults();
};

// Optional crop/resize applied after the colour transforms (LeRobot policies usually resize/crop in
// the policy, but the dataset config allows it): a centre or random crop to (h, w), then a bilinear
// resize to (h, w) without antialias.
struct CropResizeConfig {
  std::optional<std::pair<int, int>> crop;
  bool random_crop = false;
  std::optional<std::pair<int, int>> resize;
};

// The parameters drawn for one application of one transform.
struct TransformDraw {
  std::string name;  // key in ImageTransformsConfig::tfs
  std::string type;
  // ColorJitter: "brightness", "contrast", "saturation", "hue" factors (only the ones enabled).
  // SharpnessJitter: "sharpness". RandomAffine: "angle" (degrees), "tx", "ty" (pixels), "scale",
  // "shear_x", "shear_y" (degrees).
  std::map<std::string, double> params;
  // ColorJitter only: torchvision's random order of the four adjustments (0 brightness,
  // 1 contrast, 2 saturation, 3 hue); drawn even when only one of them is enabled.
  std::vector<int64_t> jitter_order;
};

// Everything one call draws: the chosen transforms in application order, and the crop window.
struct TransformPlan {
  std::vector<TransformDraw> draws;
  std::optional<std::pair<int64_t, int64_t>> crop_top_left;
};

class ImageTransforms {
 public:
  // Validates (ConfigError naming the key): known types, weights >= 0, ranges ordered and within
  // their bounds, known range names per type, max_num_transforms >= 1, positive crop/resize sizes.
  // Transforms of weight 0 are dropped, as LeRobot does.
  explicit ImageTransforms(ImageTransformsConfig config, CropResizeConfig crop_resize = {});

  // x: float [C,H,W] or [T,C,H,W] (a window: every frame gets the same parameters, as one
  // torchvision v2 call does) with values in [0, 1]. Same generator state -> same output. A call
  // makes several draws in sequence, so give each loader thread its own generator.
  torch::Tensor operator()(const torch::Tensor& x, at::Generator& gen) const;

  // The two halves of operator(): draw all parameters for an image of the given size (consuming
  // the generator exactly as operator() does), then apply them without further randomness.
  TransformPlan sample(at::Generator& gen, int64_t height, int64_t width) const;
  torch::Tensor apply(const torch::Tensor& x, const TransformPlan& plan) const;

  // True when a call can change the input: colour transforms enabled and at least one of positive
  // weight, or a crop/resize configured (crop/resize apply even when `enable` is false).
  bool enabled() const;
  // Transforms of positive weight, in listing order: the candidates of every draw.
  const std::vector<std::string>& active_names() const { return names_; }
  // How many transforms each call applies: min(#active, max_num_transforms), 0 when disabled.
  int64_t subset_size() const;
  const ImageTransformsConfig& config() const { return config_; }

 private:
  TransformDraw draw_one(const ImageTransformSpec& spec, const std::string& name, at::Generator& gen, int64_t height,
                         int64_t width) const;

  ImageTransformsConfig config_;
  CropResizeConfig crop_resize_;
  std::vector<std::string> names_;  // active transforms in listing order
  std::vector<double> probs_;       // their weights normalised to sum 1
};

}  // namespace lrhost::data
