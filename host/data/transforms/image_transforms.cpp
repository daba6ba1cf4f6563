// LeRobot's ImageTransforms / RandomSubsetApply in C++: config validation, the random draws and
// their application. The draws mirror the Python call sequence exactly (multinomial over the
// normalised float32 weights, then per chosen transform its own draws: ColorJitter randperm(4)
// then one uniform per enabled factor, SharpnessJitter one uniform, RandomAffine angle then
// translation then scale then shear), because matching that sequence is what lets a seeded run be
// compared with LeRobot itself; the pixel math lives in color_ops.cpp.
#include "host/data/transforms/image_transforms.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "host/data/transforms/color_ops.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::data {

namespace {

const std::vector<std::string> kSupportedTypes{"ColorJitter", "Identity", "RandomAffine", "SharpnessJitter"};
// Types LeRobot accepts that lrhost does not implement yet: told apart from typos in the message.
const std::vector<std::string> kLeRobotOnlyTypes{"CoarseDropout",           "GammaCorrection", "GaussianNoise",
                                                 "GaussianPatchBrightness", "JPEGCompression", "MotionBlur",
                                                 "PlanckianJitter",         "RandomShadow"};
const std::vector<std::string> kJitterKeys{"brightness", "contrast", "saturation", "hue"};

std::string fmt(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::string range_text(const std::pair<double, double>& r) {
  return "(" + fmt(r.first) + ", " + fmt(r.second) + ")";
}

// One float32 uniform draw, as torchvision's torch.empty(1).uniform_(lo, hi).item().
double uniform(at::Generator& gen, double lo, double hi) {
  return static_cast<double>(torch::empty({1}, torch::kFloat).uniform_(lo, hi, gen).item<float>());
}

void check_keys(const ImageTransformSpec& spec, const std::string& key, const std::vector<std::string>& valid) {
  for (const auto& [name, range] : spec.ranges) {
    if (std::find(valid.begin(), valid.end(), name) != valid.end()) continue;
    std::string hint;
    if (auto near = util::nearest(name, valid); !near.empty()) hint = "did you mean '" + near.front() + "'?";
    throw util::ConfigError("unknown parameter '" + key + ".kwargs." + name + "' for type " + spec.type +
                                "; expected one of " + util::quoted_list(valid),
                            hint);
  }
}

// lo <= min <= max <= hi, else a ConfigError naming the key and the rule.
void check_range(const std::pair<double, double>& r, const std::string& key, double lo, double hi,
                 const std::string& rule) {
  const bool ok =
      std::isfinite(r.first) && std::isfinite(r.second) && lo <= r.first && r.first <= r.second && r.second <= hi;
  if (!ok) throw util::ConfigError("'" + key + "' must satisfy " + rule + ", got " + range_text(r));
}

void validate_spec(const ImageTransformSpec& spec, const std::string& key) {
  if (!std::isfinite(spec.weight) || spec.weight < 0.0)
    throw util::ConfigError("'" + key + ".weight' must be a number >= 0, got " + fmt(spec.weight),
                            "a weight of 0 disables the transform");
  const auto kw = [&](const std::string& name) { return key + ".kwargs." + name; };
  const double inf = std::numeric_limits<double>::infinity();
  if (spec.type == "ColorJitter") {
    check_keys(spec, key, kJitterKeys);
    for (const auto& [name, range] : spec.ranges) {
      if (name == "hue")
        check_range(range, kw(name), -0.5, 0.5, "-0.5 <= min <= max <= 0.5");
      else
        check_range(range, kw(name), 0.0, inf, "0 <= min <= max");
    }
  } else if (spec.type == "SharpnessJitter") {
    check_keys(spec, key, {"sharpness"});
    auto it = spec.ranges.find("sharpness");
    if (it == spec.ranges.end())
      throw util::ConfigError("'" + kw("sharpness") + "' is required for type SharpnessJitter (a (min, max) range)");
    check_range(it->second, kw("sharpness"), 0.0, inf, "0 <= min <= max");
  } else if (spec.type == "RandomAffine") {
    check_keys(spec, key, {"degrees", "translate", "scale", "shear"});
    auto it = spec.ranges.find("degrees");
    if (it == spec.ranges.end())
      throw util::ConfigError("'" + kw("degrees") + "' is required for type RandomAffine (a (min, max) range)");
    check_range(it->second, kw("degrees"), -inf, inf, "min <= max");
    if (auto t = spec.ranges.find("translate"); t != spec.ranges.end()) {
      const auto [fx, fy] = t->second;
      if (!(fx >= 0.0 && fx <= 1.0 && fy >= 0.0 && fy <= 1.0))
        throw util::ConfigError("'" + kw("translate") +
                                "' is (max fraction of width, max fraction of height), each in [0, 1], got " +
                                range_text(t->second));
    }
    if (auto s = spec.ranges.find("scale"); s != spec.ranges.end()) {
      check_range(s->second, kw("scale"), 0.0, inf, "0 < min <= max");
      if (s->second.first <= 0.0)
        throw util::ConfigError("'" + kw("scale") + "' must satisfy 0 < min <= max, got " + range_text(s->second));
    }
    if (auto s = spec.ranges.find("shear"); s != spec.ranges.end())
      check_range(s->second, kw("shear"), -inf, inf, "min <= max");
  } else if (spec.type == "Identity") {
    check_keys(spec, key, {});
  } else if (std::find(kLeRobotOnlyTypes.begin(), kLeRobotOnlyTypes.end(), spec.type) != kLeRobotOnlyTypes.end()) {
    throw util::NotImplemented("'" + key + ".type': LeRobot's " + spec.type +
                               " is not implemented in lrhost; supported: " + util::quoted_list(kSupportedTypes));
  } else {
    std::string hint;
    if (auto near = util::nearest(spec.type, kSupportedTypes); !near.empty())
      hint = "did you mean '" + near.front() + "'?";
    throw util::ConfigError("unknown transform type '" + spec.type + "' at '" + key + ".type'; expected one of " +
                                util::quoted_list(kSupportedTypes),
                            hint);
  }
}

// ColorJitter's "off" rule: a range equal to the neutral value draws nothing and applies nothing.
bool jitter_enabled(const ImageTransformSpec& spec, const std::string& name) {
  auto it = spec.ranges.find(name);
  if (it == spec.ranges.end()) return false;
  const double neutral = name == "hue" ? 0.0 : 1.0;
  return !(it->second.first == neutral && it->second.second == neutral);
}

void check_size(const std::optional<std::pair<int, int>>& size, const std::string& key) {
  if (size && (size->first < 1 || size->second < 1))
    throw util::ConfigError("'" + key + "' must be a positive (height, width), got (" + std::to_string(size->first) +
                            ", " + std::to_string(size->second) + ")");
}

}  // namespace

ImageTransformsConfig ImageTransformsConfig::lerobot_defaults() {
  ImageTransformsConfig c;
  c.tfs["brightness"] = {"ColorJitter", 1.0, {{"brightness", {0.8, 1.2}}}};
  c.tfs["contrast"] = {"ColorJitter", 1.0, {{"contrast", {0.8, 1.2}}}};
  c.tfs["saturation"] = {"ColorJitter", 1.0, {{"saturation", {0.5, 1.5}}}};
  c.tfs["hue"] = {"ColorJitter", 1.0, {{"hue", {-0.05, 0.05}}}};
  c.tfs["sharpness"] = {"SharpnessJitter", 1.0, {{"sharpness", {0.5, 1.5}}}};
  c.tfs["affine"] = {"RandomAffine", 1.0, {{"degrees", {-5.0, 5.0}}, {"translate", {0.05, 0.05}}}};
  c.order = {"brightness", "contrast", "saturation", "hue", "sharpness", "affine"};
  return c;
}

ImageTransforms::ImageTransforms(ImageTransformsConfig config, CropResizeConfig crop_resize)
    : config_(std::move(config)), crop_resize_(std::move(crop_resize)) {
  if (config_.max_num_transforms < 1)
    throw util::ConfigError("'image_transforms.max_num_transforms' must be >= 1, got " +
                            std::to_string(config_.max_num_transforms));
  check_size(crop_resize_.crop, "crop_resize.crop");
  check_size(crop_resize_.resize, "crop_resize.resize");

  // Listing order: the explicit order first, then the rest alphabetically (std::map order).
  std::vector<std::string> listed;
  std::set<std::string> seen;
  for (const auto& name : config_.order) {
    if (!config_.tfs.count(name))
      throw util::ConfigError("'image_transforms.order' names '" + name + "', which is not in image_transforms.tfs");
    if (!seen.insert(name).second) throw util::ConfigError("'image_transforms.order' lists '" + name + "' twice");
    listed.push_back(name);
  }
  for (const auto& [name, spec] : config_.tfs)
    if (!seen.count(name)) listed.push_back(name);

  double total = 0.0;
  std::vector<double> weights;
  for (const auto& name : listed) {
    const auto& spec = config_.tfs.at(name);
    validate_spec(spec, "image_transforms.tfs." + name);
    if (spec.weight <= 0.0) continue;  // LeRobot drops these before sampling
    names_.push_back(name);
    weights.push_back(spec.weight);
    total += spec.weight;
  }
  for (double w : weights) probs_.push_back(w / total);
}

bool ImageTransforms::enabled() const {
  return subset_size() > 0 || crop_resize_.crop.has_value() || crop_resize_.resize.has_value();
}

int64_t ImageTransforms::subset_size() const {
  if (!config_.enable) return 0;
  return std::min<int64_t>(static_cast<int64_t>(names_.size()), config_.max_num_transforms);
}

TransformDraw ImageTransforms::draw_one(const ImageTransformSpec& spec, const std::string& name, at::Generator& gen,
                                        int64_t height, int64_t width) const {
  TransformDraw draw{name, spec.type, {}, {}};
  if (spec.type == "ColorJitter") {
    const auto perm = torch::randperm(4, gen, torch::TensorOptions().dtype(torch::kLong));
    draw.jitter_order.assign(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + 4);
    for (const auto& key : kJitterKeys)
      if (jitter_enabled(spec, key)) {
        const auto& r = spec.ranges.at(key);
        draw.params[key] = uniform(gen, r.first, r.second);
      }
  } else if (spec.type == "SharpnessJitter") {
    const auto& r = spec.ranges.at("sharpness");
    draw.params["sharpness"] = uniform(gen, r.first, r.second);
  } else if (spec.type == "RandomAffine") {
    const auto& deg = spec.ranges.at("degrees");
    draw.params["angle"] = uniform(gen, deg.first, deg.second);
    double tx = 0.0, ty = 0.0;
    if (auto t = spec.ranges.find("translate"); t != spec.ranges.end()) {
      // Whole pixels, rounded half to even like Python's round().
      const double max_dx = t->second.first * static_cast<double>(width);
      const double max_dy = t->second.second * static_cast<double>(height);
      tx = std::nearbyint(uniform(gen, -max_dx, max_dx));
      ty = std::nearbyint(uniform(gen, -max_dy, max_dy));
    }
    draw.params["tx"] = tx;
    draw.params["ty"] = ty;
    double scale = 1.0;
    if (auto s = spec.ranges.find("scale"); s != spec.ranges.end())
      scale = uniform(gen, s->second.first, s->second.second);
    draw.params["scale"] = scale;
    double shear_x = 0.0;
    if (auto s = spec.ranges.find("shear"); s != spec.ranges.end())
      shear_x = uniform(gen, s->second.first, s->second.second);
    draw.params["shear_x"] = shear_x;
    draw.params["shear_y"] = 0.0;
  }
  return draw;
}

TransformPlan ImageTransforms::sample(at::Generator& gen, int64_t height, int64_t width) const {
  TransformPlan plan;
  const int64_t n = subset_size();
  if (n > 0) {
    // torch.multinomial(torch.tensor(p), n) without replacement, p normalised in double then
    // stored as float32 exactly as LeRobot's RandomSubsetApply builds it.
    const auto probs = torch::tensor(probs_, torch::TensorOptions().dtype(torch::kFloat));
    auto picked = torch::multinomial(probs, n, /*replacement=*/false, gen);
    if (!config_.random_order) picked = std::get<0>(picked.sort());
    for (int64_t i = 0; i < n; ++i) {
      const auto& name = names_.at(static_cast<size_t>(picked[i].item<int64_t>()));
      plan.draws.push_back(draw_one(config_.tfs.at(name), name, gen, height, width));
    }
  }
  if (crop_resize_.crop && crop_resize_.random_crop) {
    const int64_t ch = crop_resize_.crop->first, cw = crop_resize_.crop->second;
    if (ch > height || cw > width)
      throw util::DataError("random crop of " + std::to_string(ch) + "x" + std::to_string(cw) +
                            " does not fit in an image of " + std::to_string(height) + "x" + std::to_string(width));
    // torchvision's RandomCrop: an offset is drawn only along a dimension that needs cropping.
    const int64_t top =
        height > ch ? torch::randint(0, height - ch + 1, torch::IntArrayRef{}, gen, torch::kLong).item<int64_t>() : 0;
    const int64_t left =
        width > cw ? torch::randint(0, width - cw + 1, torch::IntArrayRef{}, gen, torch::kLong).item<int64_t>() : 0;
    plan.crop_top_left = std::make_pair(top, left);
  }
  return plan;
}

torch::Tensor ImageTransforms::apply(const torch::Tensor& x, const TransformPlan& plan) const {
  if (x.dim() < 3 || !x.is_floating_point())
    throw util::DataError("image transforms expect a float image [C,H,W] or window [T,C,H,W], got " +
                          std::to_string(x.dim()) + " dims of " + std::string(c10::toString(x.scalar_type())));
  torch::Tensor out = x;
  for (const auto& draw : plan.draws) {
    const auto& p = draw.params;
    if (draw.type == "ColorJitter") {
      for (int64_t fn : draw.jitter_order) {
        if (fn == 0 && p.count("brightness")) out = adjust_brightness(out, p.at("brightness"));
        if (fn == 1 && p.count("contrast")) out = adjust_contrast(out, p.at("contrast"));
        if (fn == 2 && p.count("saturation")) out = adjust_saturation(out, p.at("saturation"));
        if (fn == 3 && p.count("hue")) out = adjust_hue(out, p.at("hue"));
      }
    } else if (draw.type == "SharpnessJitter") {
      out = adjust_sharpness(out, p.at("sharpness"));
    } else if (draw.type == "RandomAffine") {
      out = affine(out, p.at("angle"), {p.at("tx"), p.at("ty")}, p.at("scale"), {p.at("shear_x"), p.at("shear_y")});
    }
  }
  if (crop_resize_.crop) {
    const int64_t ch = crop_resize_.crop->first, cw = crop_resize_.crop->second;
    if (ch > out.size(-2) || cw > out.size(-1))
      throw util::DataError("crop of " + std::to_string(ch) + "x" + std::to_string(cw) +
                            " does not fit in an image of " + std::to_string(out.size(-2)) + "x" +
                            std::to_string(out.size(-1)));
    const auto [top, left] =
        plan.crop_top_left ? *plan.crop_top_left : center_crop_offsets(out.size(-2), out.size(-1), ch, cw);
    out = crop(out, top, left, ch, cw);
  }
  if (crop_resize_.resize) out = resize_bilinear(out, crop_resize_.resize->first, crop_resize_.resize->second);
  return out;
}

torch::Tensor ImageTransforms::operator()(const torch::Tensor& x, at::Generator& gen) const {
  if (x.dim() < 3)
    throw util::DataError("image transforms expect [C,H,W] or [T,C,H,W], got " + std::to_string(x.dim()) + " dims");
  return apply(x, sample(gen, x.size(-2), x.size(-1)));
}

}  // namespace lrhost::data
