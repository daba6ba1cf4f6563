// Unit tests of host/data/transforms: each colour/geometric op against torchvision 0.26 (torch
// 2.11) on a fixed small image and against hand-computed values; the seeded random subset
// against LeRobot's own ImageTransforms; reproducibility, windows, crop/resize and config errors.
//
// Oracle values come from the setup venv (~/.cache/lrhost/venv) with this image:
//   c,h,w = torch.meshgrid(torch.arange(3), torch.arange(6), torch.arange(7), indexing="ij")
//   x = ((c*37 + h*11 + w*5) % 17).float() / 16.0          # window: stack (x + 0.1*t).clamp(0,1), t=0,1
//   checksum(y) = (sum, sum of squares, sum of y_i * (i+1) over the flattened y), in float64
// per op: torchvision.transforms.v2.functional.adjust_*(x, factor), affine, resize(antialias=False),
// center_crop; end to end: lerobot/transforms/transforms.py (huggingface/lerobot 7427f318)
//   tf = ImageTransforms(cfg); torch.manual_seed(seed); y = tf(x)
// and v2.RandomCrop([3, 4]) after torch.manual_seed(seed) for the random crop.
#include <ATen/CPUGeneratorImpl.h>
#include <doctest/doctest.h>

#include <array>
#include <set>

#include "host/data/data_options.hpp"
#include "host/data/transforms/color_ops.hpp"
#include "host/data/transforms/image_transforms.hpp"
#include "host/util/error.hpp"

using namespace lrhost::data;
using lrhost::util::ConfigError;

namespace {

torch::Tensor test_image() {
  auto c = torch::arange(3).view({3, 1, 1}), h = torch::arange(6).view({1, 6, 1}), w = torch::arange(7).view({1, 1, 7});
  return ((c * 37 + h * 11 + w * 5) % 17).to(torch::kFloat) / 16.0;
}

torch::Tensor test_window() {
  auto x = test_image();
  return torch::stack({x, (x + 0.1).clamp(0, 1)});
}

std::array<double, 3> checksum(const torch::Tensor& y) {
  auto f = y.to(torch::kDouble).flatten();
  auto idx = torch::arange(1, f.numel() + 1, torch::kDouble);
  return {f.sum().item<double>(), (f * f).sum().item<double>(), (f * idx).sum().item<double>()};
}

// Tight enough that one float32 ulp in any pixel shows up in the index-weighted sum.
void check_sum(const torch::Tensor& y, std::array<double, 3> expected) {
  auto got = checksum(y);
  for (int i = 0; i < 3; ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-11));
}

at::Generator seeded(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

ImageTransformsConfig enabled_defaults() {
  auto cfg = ImageTransformsConfig::lerobot_defaults();
  cfg.enable = true;
  return cfg;
}

std::vector<std::string> drawn_names(const TransformPlan& plan) {
  std::vector<std::string> out;
  for (const auto& d : plan.draws) out.push_back(d.name);
  return out;
}

}  // namespace

TEST_CASE("colour ops match torchvision v2 on a fixed image") {
  const auto x = test_image();
  check_sum(x, {64.0, 44.265625, 4085.125});
  check_sum(rgb_to_grayscale(x), {20.980750381947, 12.396890081714, 448.290621161461});
  check_sum(adjust_brightness(x, 1.3), {77.581248596311, 62.307771591879, 4948.493660703301});
  check_sum(adjust_contrast(x, 0.6), {63.576899290085, 36.312308650367, 4049.808109432459});
  check_sum(adjust_saturation(x, 1.4), {64.397532641888, 47.721508822522, 4217.263357490301});
  check_sum(adjust_hue(x, 0.2), {69.550002936274, 50.476881137288, 4318.249928731471});
  check_sum(adjust_hue(x, -0.45), {70.625002238899, 51.384690459613, 4418.862673763186});
  check_sum(adjust_sharpness(x, 1.8), {63.218268912286, 47.383743411014, 4026.758633032441});
  check_sum(adjust_sharpness(x, 0.0), {64.245192706585, 39.640371127374, 4108.254834145308});
  // Contrast takes one mean per frame of a window.
  check_sum(adjust_contrast(test_window(), 0.6), {138.660630702972, 84.940848182748, 18289.860217005014});
}

TEST_CASE("geometric ops match torchvision v2 on a fixed image") {
  const auto x = test_image();
  check_sum(affine(x, 4.0, {1, -1}, 1.0, {0, 0}), {46.5, 32.4765625, 2794.875});
  check_sum(affine(x, -30.0, {0, 2}, 0.9, {10, 0}), {35.1875, 23.71484375, 2459.5625});
  check_sum(resize_bilinear(x, 4, 9), {54.486110806465, 30.788362792981, 2983.979148238897});
  const auto [top, left] = center_crop_offsets(6, 7, 3, 4);
  CHECK(top == 2);   // round(1.5) = 2 (ties to even)
  CHECK(left == 2);  // round(1.5) = 2
  const auto cc = crop(x, top, left, 3, 4);
  CHECK(cc.sizes() == torch::IntArrayRef{3, 3, 4});
  check_sum(cc, {18.375, 12.6796875, 341.1875});
  CHECK(center_crop_offsets(7, 7, 2, 2).first == 2);  // round(2.5) = 2
}

TEST_CASE("colour ops on hand-computed values") {
  auto px = torch::tensor({0.5f, 0.25f, 1.0f}).view({3, 1, 1});
  CHECK(adjust_brightness(px, 1.5).flatten()[0].item<float>() == doctest::Approx(0.75));
  CHECK(adjust_brightness(px, 1.5).flatten()[2].item<float>() == 1.0f);  // clamped
  const double gray = 0.2989 * 0.5 + 0.587 * 0.25 + 0.114 * 1.0;
  CHECK(rgb_to_grayscale(px).item<float>() == doctest::Approx(gray));
  // Saturation 0 gives the grey value in every channel; contrast 0 the (here single-pixel) mean.
  auto s0 = adjust_saturation(px, 0.0);
  for (int c = 0; c < 3; ++c) CHECK(s0.flatten()[c].item<float>() == doctest::Approx(gray).epsilon(1e-6));
  auto c0 = adjust_contrast(px, 0.0);
  for (int c = 0; c < 3; ++c) CHECK(c0.flatten()[c].item<float>() == doctest::Approx(gray).epsilon(1e-6));
  // Hue +1/3 turn maps red to green, -1/3 to blue.
  auto red = torch::tensor({1.0f, 0.0f, 0.0f}).view({3, 1, 1});
  CHECK(torch::allclose(adjust_hue(red, 1.0 / 3.0).flatten(), torch::tensor({0.0f, 1.0f, 0.0f}), 0, 1e-5));
  CHECK(torch::allclose(adjust_hue(red, -1.0 / 3.0).flatten(), torch::tensor({0.0f, 0.0f, 1.0f}), 0, 1e-5));
  // Sharpness: a lone 0.5 in the middle of a 3x3 zero image blurs to 0.5 * 5/13; the border stays.
  auto dot = torch::zeros({1, 3, 3});
  dot[0][1][1] = 0.5f;
  auto blurred = adjust_sharpness(dot, 0.0);
  CHECK(blurred[0][1][1].item<float>() == doctest::Approx(0.5 * 5.0 / 13.0));
  CHECK(blurred.sum().item<float>() == doctest::Approx(0.5 * 5.0 / 13.0));
  CHECK(adjust_sharpness(dot, 2.0)[0][1][1].item<float>() == doctest::Approx(1.0 - 0.5 * 5.0 / 13.0));
  // Too small to have an interior: unchanged.
  auto thin = torch::rand({3, 2, 5});
  CHECK(torch::equal(adjust_sharpness(thin, 0.0), thin));
  // One channel: saturation and hue leave it alone.
  auto mono = torch::rand({1, 4, 4});
  CHECK(torch::equal(adjust_saturation(mono, 0.3), mono));
  CHECK(torch::equal(adjust_hue(mono, 0.3), mono));
  // Translation by whole pixels shifts and fills with 0.
  auto ramp = torch::arange(1, 6, torch::kFloat).view({1, 1, 5}) / 5.0;
  auto shifted = affine(ramp, 0.0, {1, 0}, 1.0, {0, 0});
  CHECK(torch::equal(shifted.flatten(), torch::tensor({0.0f, 0.2f, 0.4f, 0.6f, 0.8f})));
}

TEST_CASE("identity at neutral factors, clamp to [0, 1]") {
  const auto x = test_image();
  CHECK(torch::equal(adjust_brightness(x, 1.0), x));
  CHECK(torch::equal(adjust_contrast(x, 1.0), x));
  CHECK(torch::equal(adjust_saturation(x, 1.0), x));
  CHECK(torch::equal(adjust_sharpness(x, 1.0), x));
  CHECK(torch::allclose(adjust_hue(x, 0.0), x, 0, 1e-6));
  CHECK(torch::equal(affine(x, 0.0, {0, 0}, 1.0, {0, 0}), x));
  for (const auto& y : {adjust_brightness(x, 3.0), adjust_contrast(x, 5.0), adjust_saturation(x, 4.0),
                        adjust_sharpness(x, 6.0), adjust_hue(x, 0.37)}) {
    CHECK(y.min().item<float>() >= 0.0f);
    CHECK(y.max().item<float>() <= 1.0f);
  }
  CHECK(adjust_brightness(x, 3.0).max().item<float>() == 1.0f);
  CHECK_THROWS_AS(adjust_hue(x, 0.6), lrhost::util::DataError);
  CHECK_THROWS_AS(adjust_brightness(torch::rand({4, 3, 3}), 1.1), lrhost::util::DataError);  // 4 channels
}

TEST_CASE("seeded subset matches LeRobot's ImageTransforms") {
  struct Case {
    uint64_t seed;
    std::vector<std::string> names;
    std::array<double, 3> sum;
  };
  const ImageTransforms tf(enabled_defaults());
  const std::vector<Case> cases{
      {0, {"contrast", "saturation", "sharpness"}, {63.668938012794, 42.279698975185, 4056.240551750176}},
      {1, {"brightness", "hue", "affine"}, {60.762018568814, 40.800414738350, 3872.715592756867}},
      {2, {"contrast", "hue", "affine"}, {58.318045204505, 40.333881942636, 3727.171920159832}},
      {7, {"brightness", "contrast", "hue"}, {58.124920234084, 34.407408558701, 3701.229305341840}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.seed);
    auto gen = seeded(c.seed);
    CHECK(drawn_names(tf.sample(gen, 6, 7)) == c.names);
    auto gen2 = seeded(c.seed);
    check_sum(tf(test_image(), gen2), c.sum);
  }
  SUBCASE("a window gets one draw for all frames") {
    auto gen = seeded(3);
    check_sum(tf(test_window(), gen), {147.789136610925, 113.242521114491, 19424.781923681498});
  }
  SUBCASE("random order over all six") {
    auto cfg = enabled_defaults();
    cfg.max_num_transforms = 6;
    cfg.random_order = true;
    const ImageTransforms all(cfg);
    auto gen = seeded(5);
    CHECK(drawn_names(all.sample(gen, 6, 7)) ==
          std::vector<std::string>{"contrast", "sharpness", "hue", "saturation", "brightness", "affine"});
    auto gen2 = seeded(5);
    check_sum(all(test_image(), gen2), {55.883937118575, 39.211506380734, 3702.865271724761});
  }
  SUBCASE("custom weights, a multi-factor jitter, a full affine, a zero weight") {
    ImageTransformsConfig cfg;
    cfg.enable = true;
    cfg.max_num_transforms = 2;
    cfg.tfs["jit"] = {
        "ColorJitter",
        2.0,
        {{"brightness", {0.5, 1.5}}, {"contrast", {0.7, 1.3}}, {"saturation", {0.2, 1.8}}, {"hue", {-0.3, 0.3}}}};
    cfg.tfs["aff"] = {"RandomAffine",
                      1.0,
                      {{"degrees", {-20, 20}}, {"translate", {0.2, 0.3}}, {"scale", {0.8, 1.2}}, {"shear", {-10, 10}}}};
    cfg.tfs["off"] = {"SharpnessJitter", 0.0, {{"sharpness", {0.5, 1.5}}}};
    cfg.tfs["sh"] = {"SharpnessJitter", 0.5, {{"sharpness", {0.0, 2.0}}}};
    cfg.order = {"jit", "aff", "off", "sh"};
    const ImageTransforms custom(cfg);
    CHECK(custom.active_names() == std::vector<std::string>{"jit", "aff", "sh"});
    auto g11 = seeded(11), g12 = seeded(12);
    CHECK(drawn_names(custom.sample(g11, 6, 7)) == std::vector<std::string>{"jit", "aff"});
    CHECK(drawn_names(custom.sample(g12, 6, 7)) == std::vector<std::string>{"jit", "sh"});
    g11 = seeded(11);
    g12 = seeded(12);
    check_sum(custom(test_image(), g11), {56.089418031275, 47.114651366066, 3802.256836295128});
    check_sum(custom(test_image(), g12), {67.834867400117, 50.986066064202, 4406.805661146063});
  }
}

TEST_CASE("same seed same output, different seeds differ") {
  const ImageTransforms tf(enabled_defaults());
  auto x = torch::rand({3, 16, 16}, seeded(99));
  auto a = seeded(42), b = seeded(42), c = seeded(43);
  auto ya = tf(x, a), yb = tf(x, b), yc = tf(x, c);
  CHECK(torch::equal(ya, yb));
  CHECK_FALSE(torch::equal(ya, yc));
  // The generator advances: a second call from the same generator differs from the first.
  CHECK_FALSE(torch::equal(tf(x, a), ya));
}

TEST_CASE("subset size and weights") {
  auto cfg = enabled_defaults();
  cfg.tfs["contrast"].weight = 0.0;
  cfg.tfs["affine"].weight = 0.0;
  cfg.max_num_transforms = 2;
  const ImageTransforms tf(cfg);
  CHECK(tf.subset_size() == 2);
  std::set<std::string> ever;
  auto gen = seeded(1);
  for (int i = 0; i < 300; ++i) {
    auto plan = tf.sample(gen, 8, 8);
    CHECK(plan.draws.size() == 2);
    std::set<std::string> once;
    for (const auto& d : plan.draws) {
      CHECK(d.name != "contrast");
      CHECK(d.name != "affine");
      once.insert(d.name);
      ever.insert(d.name);
      for (const auto& [k, v] : d.params) {
        const auto r = cfg.tfs.at(d.name).ranges.at(k);
        CHECK(v >= r.first);
        CHECK(v <= r.second);
      }
    }
    CHECK(once.size() == 2);  // without replacement
  }
  CHECK(ever == std::set<std::string>{"brightness", "hue", "saturation", "sharpness"});

  cfg.max_num_transforms = 10;  // capped at the number of active transforms
  CHECK(ImageTransforms(cfg).subset_size() == 4);
  cfg.enable = false;
  const ImageTransforms off(cfg);
  CHECK(off.subset_size() == 0);
  CHECK_FALSE(off.enabled());
  auto x = test_image();
  CHECK(torch::equal(off(x, gen), x));
  auto all_zero = enabled_defaults();
  for (auto& [name, spec] : all_zero.tfs) spec.weight = 0.0;
  CHECK_FALSE(ImageTransforms(all_zero).enabled());
}

TEST_CASE("a window [T,C,H,W] shares one draw across frames") {
  auto cfg = enabled_defaults();
  cfg.max_num_transforms = 6;
  const ImageTransforms tf(cfg);
  auto window = torch::rand({4, 3, 10, 12}, seeded(5));
  auto gen = seeded(8);
  auto plan = tf.sample(gen, 10, 12);
  auto out = tf.apply(window, plan);
  CHECK(out.sizes() == window.sizes());
  for (int64_t t = 0; t < 4; ++t) CHECK(torch::equal(out[t], tf.apply(window[t], plan)));
  // operator() on the window draws the same plan as sample() from the same state.
  auto gen2 = seeded(8);
  CHECK(torch::equal(tf(window, gen2), out));
}

TEST_CASE("crop and resize") {
  const auto x = test_image();
  SUBCASE("centre crop then resize") {
    const ImageTransforms tf(ImageTransformsConfig{}, CropResizeConfig{std::pair{3, 4}, false, std::pair{5, 2}});
    CHECK(tf.enabled());
    auto gen = seeded(0);
    auto y = tf(x, gen);
    CHECK(y.sizes() == torch::IntArrayRef{3, 5, 2});
    CHECK(torch::equal(y, resize_bilinear(crop(x, 2, 2, 3, 4), 5, 2)));
    auto w = tf(test_window(), gen);
    CHECK(w.sizes() == torch::IntArrayRef{2, 3, 5, 2});
  }
  SUBCASE("random crop draws like torchvision's RandomCrop") {
    const ImageTransforms tf(ImageTransformsConfig{}, CropResizeConfig{std::pair{3, 4}, true, std::nullopt});
    auto g9 = seeded(9), g10 = seeded(10);
    CHECK(tf.sample(g9, 6, 7).crop_top_left == std::pair<int64_t, int64_t>{2, 0});
    CHECK(tf.sample(g10, 6, 7).crop_top_left == std::pair<int64_t, int64_t>{1, 1});
    g9 = seeded(9);
    g10 = seeded(10);
    check_sum(tf(x, g9), {19.25, 13.6015625, 359.5});
    check_sum(tf(x, g10), {18.5, 12.859375, 341.375});
    const ImageTransforms tf2(ImageTransformsConfig{}, CropResizeConfig{std::pair{3, 4}, true, std::pair{5, 2}});
    g9 = seeded(9);
    check_sum(tf2(x, g9), {16.006249904633, 9.241132665128, 250.362498998642});
  }
  SUBCASE("a crop larger than the image is a data error") {
    const ImageTransforms tf(ImageTransformsConfig{}, CropResizeConfig{std::pair{8, 4}, false, std::nullopt});
    auto gen = seeded(0);
    CHECK_THROWS_AS(tf(x, gen), lrhost::util::DataError);
  }
}

TEST_CASE("config errors name the key") {
  auto bad = [](auto edit) {
    auto cfg = ImageTransformsConfig::lerobot_defaults();
    edit(cfg);
    return cfg;
  };
  auto message = [](const ImageTransformsConfig& cfg, CropResizeConfig cr = {}) -> std::string {
    try {
      ImageTransforms tf(cfg, cr);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  auto contains = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };

  auto m = message(bad([](auto& c) { c.tfs["hue"].weight = -1.0; }));
  CHECK(contains(m, "image_transforms.tfs.hue.weight"));
  m = message(bad([](auto& c) { c.tfs["hue"].type = "ColourJitter"; }));
  CHECK(contains(m, "image_transforms.tfs.hue.type"));
  CHECK(contains(m, "'ColorJitter', 'Identity', 'RandomAffine', 'SharpnessJitter'"));
  m = message(bad([](auto& c) { c.tfs["brightness"].ranges["brightness"] = {1.2, 0.8}; }));
  CHECK(contains(m, "image_transforms.tfs.brightness.kwargs.brightness"));
  m = message(bad([](auto& c) { c.tfs["brightness"].ranges["brightness"] = {-0.1, 0.8}; }));
  CHECK(contains(m, "image_transforms.tfs.brightness.kwargs.brightness"));
  m = message(bad([](auto& c) { c.tfs["hue"].ranges["hue"] = {-0.6, 0.1}; }));
  CHECK(contains(m, "image_transforms.tfs.hue.kwargs.hue"));
  m = message(bad([](auto& c) { c.tfs["sharpness"].ranges["sharpness"] = {1.5, 0.5}; }));
  CHECK(contains(m, "image_transforms.tfs.sharpness.kwargs.sharpness"));
  m = message(bad([](auto& c) { c.tfs["sharpness"].ranges = {{"sharpnes", {0.5, 1.5}}}; }));
  CHECK(contains(m, "image_transforms.tfs.sharpness.kwargs.sharpnes"));
  m = message(bad([](auto& c) { c.tfs["affine"].ranges["degrees"] = {5, -5}; }));
  CHECK(contains(m, "image_transforms.tfs.affine.kwargs.degrees"));
  m = message(bad([](auto& c) { c.tfs["affine"].ranges["translate"] = {1.5, 0.1}; }));
  CHECK(contains(m, "image_transforms.tfs.affine.kwargs.translate"));
  m = message(bad([](auto& c) { c.max_num_transforms = 0; }));
  CHECK(contains(m, "image_transforms.max_num_transforms"));
  m = message(bad([](auto& c) { c.order.push_back("blur"); }));
  CHECK(contains(m, "image_transforms.order"));
  m = message(ImageTransformsConfig{}, CropResizeConfig{std::pair{0, 4}, false, std::nullopt});
  CHECK(contains(m, "crop_resize.crop"));
  // LeRobot-only types are reported as not implemented, not as typos.
  CHECK_THROWS_AS(ImageTransforms(bad([](auto& c) { c.tfs["hue"].type = "GaussianNoise"; })),
                  lrhost::util::NotImplemented);
  // The defaults themselves are valid and listed in LeRobot's order.
  CHECK(ImageTransforms(ImageTransformsConfig::lerobot_defaults()).active_names() ==
        std::vector<std::string>{"brightness", "contrast", "saturation", "hue", "sharpness", "affine"});
}

TEST_CASE("image_transforms from a recipe table keep LeRobot's listing order of its transform names") {
  // A Lua table reaches C++ with its keys sorted; the recipes declare LeRobot's six transforms, and
  // the order decides the draws, so it must be LeRobot's dict order, not the alphabet's.
  const nlohmann::json table = {
      {"enable", true},
      {"tfs",
       {{"affine", {{"type", "RandomAffine"}, {"kwargs", {{"degrees", {-5.0, 5.0}}, {"translate", {0.05, 0.05}}}}}},
        {"brightness", {{"type", "ColorJitter"}, {"kwargs", {{"brightness", {0.8, 1.2}}}}}},
        {"contrast", {{"type", "ColorJitter"}, {"kwargs", {{"contrast", {0.8, 1.2}}}}}},
        {"hue", {{"type", "ColorJitter"}, {"kwargs", {{"hue", {-0.05, 0.05}}}}}},
        {"saturation", {{"type", "ColorJitter"}, {"kwargs", {{"saturation", {0.5, 1.5}}}}}},
        {"sharpness", {{"type", "SharpnessJitter"}, {"kwargs", {{"sharpness", {0.5, 1.5}}}}}},
        {"zoom", {{"type", "Identity"}}},
        {"blur", {{"type", "Identity"}}}}}};
  const auto transforms = lrhost::data::image_transforms_from_json(table);
  CHECK(transforms.active_names() ==
        std::vector<std::string>{"brightness", "contrast", "saturation", "hue", "sharpness", "affine", "blur", "zoom"});
}
