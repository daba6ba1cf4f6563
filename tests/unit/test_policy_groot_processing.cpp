// Unit tests of GR00T N1.7's processor math (host/policy/groot/groot_pack, groot_images) beyond the
// LeRobot interop (interop.groot_processing): hand-computed small cases of the min/max normalisation
// (clipping, max == min, short stats), the action padding and mask, the unpack inverse and LIBERO
// decode, the language / embodiment / camera rules, the crop arithmetic, smart_resize and the patch
// order, and what each function refuses.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "host/policy/groot/groot_images.hpp"
#include "host/policy/groot/groot_pack.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace gp = lrhost::policy::groot;

namespace {

torch::Tensor gproc_f32(std::vector<float> values, std::vector<int64_t> shape) {
  return torch::tensor(values, torch::kFloat32).view(shape);
}

bool gproc_equal(const torch::Tensor& got, const torch::Tensor& want) {
  return got.sizes() == want.sizes() && got.scalar_type() == want.scalar_type() && torch::equal(got, want);
}

bool gproc_mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("groot pack: min/max normalisation clips, maps max == min to 0 and pads short stats with [0, 1]") {
  const gp::MinMaxStats stats{gproc_f32({0, -1, 2}, {3}), gproc_f32({2, 1, 2}, {3})};
  const auto x = gproc_f32({1, 0.5f, 7, 5, -3, 2}, {2, 3});
  CHECK(gproc_equal(gp::groot_min_max_normalize(x, stats, true), gproc_f32({0, 0.5f, 0, 1, -1, 0}, {2, 3})));
  CHECK(gproc_equal(gp::groot_min_max_normalize(x, stats, false), gproc_f32({0, 0.5f, 0, 4, -3, 0}, {2, 3})));
  // Stats shorter than D: min 0 / max 1 for the rest (y = 2x - 1); longer: truncated; float64 stats cast.
  const gp::MinMaxStats short_stats{torch::tensor({0.0}, torch::kFloat64), torch::tensor({2.0}, torch::kFloat64)};
  CHECK(gproc_equal(gp::groot_min_max_normalize(gproc_f32({1, 0.25f, 0.75f}, {1, 3}), short_stats, true),
                    gproc_f32({0, -0.5f, 0.5f}, {1, 3})));
  const gp::MinMaxStats long_stats{gproc_f32({0, 0, 0, 0}, {4}), gproc_f32({2, 4, 8, 16}, {4})};
  CHECK(gproc_equal(gp::groot_min_max_normalize(gproc_f32({1, 1}, {1, 2}), long_stats, true),
                    gproc_f32({0, -0.5f}, {1, 2})));
  // Absent entries are LeRobot's zeros / ones.
  CHECK(gproc_equal(gp::groot_min_max_normalize(gproc_f32({0.5f}, {1, 1}), gp::MinMaxStats{}, true),
                    gproc_f32({0}, {1, 1})));
}

TEST_CASE("groot pack: state (B, D) becomes (B, 1, max_state_dim) zero-padded; bad shapes are refused") {
  gp::GrootPackSizes sizes;
  sizes.max_state_dim = 4;
  const gp::MinMaxStats stats{gproc_f32({0, 0}, {2}), gproc_f32({2, 2}, {2})};
  const auto state = gp::groot_pack_state(gproc_f32({1, 2, 0, 3}, {2, 2}), &stats, sizes);
  CHECK(gproc_equal(state, gproc_f32({0, 1, 0, 0, -1, 1, 0, 0}, {2, 1, 4})));
  // No stats entry: LeRobot leaves the state raw.
  CHECK(
      gproc_equal(gp::groot_pack_state(gproc_f32({3, 5}, {1, 2}), nullptr, sizes), gproc_f32({3, 5, 0, 0}, {1, 1, 4})));
  using lrhost::test::error_of;
  using lrhost::util::DataError;
  CHECK(gproc_mentions(error_of<DataError>([&] {
                         gp::groot_pack_state(torch::zeros({1, 5}), nullptr, sizes);
                       }),
                       "max_state_dim 4"));
  CHECK(gproc_mentions(error_of<DataError>([&] {
                         gp::groot_pack_state(torch::zeros({1, 1, 2}), nullptr, sizes);
                       }),
                       "(B, D)"));
}

TEST_CASE(
    "groot pack: the action is padded to (B, H, max_action_dim), padded rows zeroed, the mask on the first D dims") {
  gp::GrootPackSizes sizes;
  sizes.max_action_dim = 4;
  sizes.action_horizon = 5;
  sizes.valid_action_horizon = 5;
  const gp::MinMaxStats stats{gproc_f32({-1, -1}, {2}), gproc_f32({1, 1}, {2})};  // y = x for these values
  const auto action = gproc_f32({0.5f, -0.25f, 0.75f, -0.5f, -0.5f, 0.25f,        //
                                 0.125f, 0.5f, -1, 1, 0.25f, -0.75f},
                                {2, 3, 2});
  const auto is_pad = torch::tensor({0, 0, 1, 0, 0, 0}, torch::kInt64).view({2, 3});
  const auto packed = gp::groot_pack_action(action, is_pad, &stats, sizes);
  REQUIRE(packed.action.sizes() == torch::IntArrayRef({2, 5, 4}));
  REQUIRE((packed.action_mask.scalar_type() == torch::kFloat32));
  auto want = torch::zeros({2, 5, 4});
  want.index_put_({0, torch::indexing::Slice(0, 2), torch::indexing::Slice(0, 2)}, action[0].slice(0, 0, 2));
  want.index_put_({1, torch::indexing::Slice(0, 3), torch::indexing::Slice(0, 2)}, action[1]);
  CHECK(torch::equal(packed.action, want));
  // The padded row is multiplied by 0 as LeRobot does: its negative entry is -0.0.
  CHECK(std::signbit(packed.action[0][2][0].item<float>()));
  auto mask = torch::zeros({2, 5, 4});
  mask.index_put_({0, torch::indexing::Slice(0, 2), torch::indexing::Slice(0, 2)}, 1.0);
  mask.index_put_({1, torch::indexing::Slice(0, 3), torch::indexing::Slice(0, 2)}, 1.0);
  CHECK(gproc_equal(packed.action_mask, mask));

  // A valid horizon shorter than the chunk masks the tail too; an unbatched-step action (B, D) is one row.
  sizes.valid_action_horizon = 1;
  const auto short_valid = gp::groot_pack_action(action, torch::Tensor(), &stats, sizes);
  CHECK(short_valid.action_mask.slice(1, 1).sum().item<double>() == 0.0);
  CHECK(short_valid.action.slice(1, 1).abs().sum().item<double>() == 0.0);
  const auto one_step = gp::groot_pack_action(gproc_f32({0.5f, 0.5f}, {1, 2}), torch::Tensor(), nullptr, sizes);
  CHECK(one_step.action.sizes() == torch::IntArrayRef({1, 5, 4}));
  CHECK(one_step.action_mask.sum().item<double>() == 2.0);

  using lrhost::test::error_of;
  using lrhost::util::DataError;
  CHECK(gproc_mentions(error_of<DataError>([&] {
                         gp::groot_pack_action(torch::zeros({1, 6, 2}), {}, nullptr, sizes);
                       }),
                       "action_horizon 5"));
  CHECK(gproc_mentions(error_of<DataError>([&] {
                         gp::groot_pack_action(torch::zeros({1, 2, 5}), {}, nullptr, sizes);
                       }),
                       "max_action_dim 4"));
  CHECK(gproc_mentions(error_of<DataError>([&] {
                         gp::groot_pack_action(torch::zeros({2, 3, 2}), torch::zeros({3, 3}), nullptr, sizes);
                       }),
                       "action_is_pad"));
  CHECK(gproc_mentions(error_of<DataError>([&] { gp::groot_pack_action(torch::zeros({2}), {}, nullptr, sizes); }),
                       "(B, T, D)"));
}

TEST_CASE("groot pack: the inference action mask, embodiment ids and camera order") {
  gp::GrootPackSizes sizes;
  sizes.action_horizon = 4;
  sizes.valid_action_horizon = 3;
  CHECK(
      gproc_equal(gp::groot_inference_action_mask(2, sizes, torch::kCPU), gproc_f32({1, 1, 1, 0, 1, 1, 1, 0}, {2, 4})));

  CHECK(gp::groot_embodiment_id("new_embodiment") == 10);
  CHECK(gp::groot_embodiment_id("libero_sim") == 2);
  CHECK(gp::groot_embodiment_id("simpler_env_google") == 0);
  CHECK(gproc_equal(gp::groot_embodiment_ids("libero_sim", 3, torch::kCPU), torch::full({3}, 2, torch::kInt32)));
  const auto message = lrhost::test::error_of<lrhost::util::ConfigError>([] { gp::groot_embodiment_id("my_robot"); });
  CHECK(gproc_mentions(message, "'my_robot'"));
  CHECK(gproc_mentions(message, "new_embodiment"));

  CHECK(gp::groot_camera_order({"observation.state", "observation.images.wrist", "observation.images.front", "task"}) ==
        std::vector<std::string>{"observation.images.front", "observation.images.wrist"});
  CHECK(gp::groot_camera_order({"observation.image", "observation.state"}) ==
        std::vector<std::string>{"observation.image"});
  CHECK(gp::groot_camera_order({"observation.image", "observation.images.b", "observation.images_a"}) ==
        std::vector<std::string>{"observation.images.b", "observation.images_a"});
  CHECK(gp::groot_camera_order({"observation.state"}).empty());

  // A checkpoint's video_modality_keys: its order, LIBERO's image2 alias, what is missing or left over.
  const auto order = gp::groot_checkpoint_camera_order(
      {"observation.images.front", "observation.images.image2", "observation.images.side", "observation.state"},
      {"wrist_image", "front", "top"});
  CHECK(order.cameras == std::vector<std::string>{"observation.images.image2", "observation.images.front"});
  CHECK(order.unmatched == std::vector<std::string>{"top"});
  CHECK(order.unused == std::vector<std::string>{"observation.images.side"});
  CHECK(gp::groot_checkpoint_camera_order({"observation.image"}, {"front"}).cameras ==
        std::vector<std::string>{"observation.image"});
  CHECK(gproc_mentions(lrhost::test::error_of<lrhost::util::DataError>(
                           [] { gp::groot_checkpoint_camera_order({"observation.images.a"}, {"b"}); }),
                       "none of the checkpoint's video modality keys"));
}

TEST_CASE("groot pack: language is broadcast, defaulted and formalized like utils.py; non-ASCII is refused") {
  CHECK(gp::groot_language_batch({"Pick up the red cube!"}, 2, true) ==
        std::vector<std::string>{"pick up the red cube", "pick up the red cube"});
  CHECK(gp::groot_language_batch({}, 1, true) == std::vector<std::string>{"perform the task"});
  CHECK(gp::groot_language_batch({""}, 1, false) == std::vector<std::string>{"Perform the task."});
  CHECK(gp::groot_language_batch({"Tab\tand_Under-score 42", "x"}, 2, true) ==
        std::vector<std::string>{"tab\tand_underscore 42", "x"});
  // Formalized to "", the VLM step (formalize off) then substitutes the unformalized default.
  const auto packed = gp::groot_language_batch({"!!!"}, 1, true);
  CHECK(packed == std::vector<std::string>{""});
  CHECK(gp::groot_language_batch(packed, 1, false) == std::vector<std::string>{"Perform the task."});
  using lrhost::test::error_of;
  using lrhost::util::DataError;
  CHECK(gproc_mentions(error_of<DataError>([] { gp::groot_language_batch({"a", "b"}, 3, true); }), "has 2 entries"));
  CHECK(gproc_mentions(error_of<DataError>([] { gp::groot_language_batch({"Caf\xc3\xa9"}, 1, true); }), "not ASCII"));
  CHECK(gp::groot_language_batch({"Caf\xc3\xa9"}, 1, false) == std::vector<std::string>{"Caf\xc3\xa9"});
}

TEST_CASE("groot unpack: slice, clamp, inverse min/max (min where max == min), zero-padded short stats, LIBERO") {
  const gp::MinMaxStats stats{gproc_f32({0, 1}, {2}), gproc_f32({2, 1}, {2})};
  gp::GrootUnpackOptions options;
  options.env_action_dim = 2;
  const auto y = gproc_f32({0.5f, 0.3f, 9, 3, -2, 9}, {1, 2, 3});
  CHECK(gproc_equal(gp::groot_unpack_action(y, &stats, options), gproc_f32({1.5f, 1, 2, 1}, {1, 2, 2})));
  options.clip_normalized_action = false;
  CHECK(gproc_equal(gp::groot_unpack_action(y, &stats, options), gproc_f32({1.5f, 1, 4, 1}, {1, 2, 2})));
  // Short stats: BOTH min and max padded with 0 (unlike the pack step), so the extra dim decodes to 0.
  const gp::MinMaxStats short_stats{gproc_f32({0}, {1}), gproc_f32({2}, {1})};
  CHECK(
      gproc_equal(gp::groot_unpack_action(gproc_f32({0, 0.5f}, {1, 2}), &short_stats, {}), gproc_f32({1, 0}, {1, 2})));
  // No stats: no clamp, no inverse.
  CHECK(gproc_equal(gp::groot_unpack_action(gproc_f32({3, -3}, {1, 2}), nullptr, {}), gproc_f32({3, -3}, {1, 2})));

  gp::GrootUnpackOptions libero;
  libero.libero_gripper_action = true;
  auto seven = torch::zeros({3, 7});
  seven.select(1, 6).copy_(gproc_f32({0.9f, 0.2f, 0.5f}, {3}));
  const auto decoded = gp::groot_unpack_action(seven, nullptr, libero);
  CHECK(gproc_equal(decoded.select(1, 6), gproc_f32({-1, 1, 0}, {3})));
  CHECK(gproc_equal(decoded.slice(1, 0, 6), seven.slice(1, 0, 6)));
  libero.libero_gripper_binarize = false;
  CHECK(
      torch::allclose(gp::groot_unpack_action(seven, nullptr, libero).select(1, 6), gproc_f32({-0.8f, 0.6f, 0}, {3})));
  // Fewer than 7 dims: LeRobot leaves the last dim alone.
  CHECK(gproc_equal(gp::groot_unpack_action(gproc_f32({0.9f, 0.9f}, {1, 2}), nullptr, libero),
                    gproc_f32({0.9f, 0.9f}, {1, 2})));

  CHECK(gproc_mentions(lrhost::test::error_of<lrhost::util::DataError>([&] {
                         gp::groot_unpack_action(torch::zeros({1, 1}), nullptr, options);
                       }),
                       "env_action_dim 2"));
}

TEST_CASE("groot images: float -> uint8 truncates; the crop rounds half to even and floors the offset") {
  CHECK(gproc_equal(gp::groot_images_to_uint8(gproc_f32({0.999f, 1.5f, -0.2f, 0.5f}, {4})),
                    torch::tensor({254, 255, 0, 127}, torch::kUInt8)));
  CHECK(gproc_mentions(lrhost::test::error_of<lrhost::util::DataError>(
                           [] { gp::groot_images_to_uint8(torch::zeros({1}, torch::kInt32)); }),
                       "float in [0, 1] or uint8"));

  const auto image =
      torch::arange(2 * 3 * 10 * 10, torch::kInt64).remainder(251).to(torch::kUInt8).view({2, 3, 10, 10});
  CHECK(gp::groot_resize_bicubic_uint8(image, 10, 10).data_ptr() == image.data_ptr());
  // Edge 10 (no resize), fraction 0.7: a 7x7 window at offset floor(3/2) = 1, already the target.
  gp::GrootImageGeometry geometry;
  geometry.target_height = geometry.target_width = 7;
  geometry.shortest_image_edge = 10;
  geometry.crop_fraction = 0.7;
  CHECK(gproc_equal(gp::groot_transform_images_for_vlm(image, geometry).contiguous(),
                    image.slice(2, 1, 8).slice(3, 1, 8).contiguous()));
  // Fraction 0.25: round(2.5) = 2 (Python's banker's rounding), offset 4.
  geometry.target_height = geometry.target_width = 2;
  geometry.crop_fraction = 0.25;
  CHECK(gproc_equal(gp::groot_transform_images_for_vlm(image, geometry).contiguous(),
                    image.slice(2, 4, 6).slice(3, 4, 6).contiguous()));
  // The default geometry fraction comes from crop / target; a constant image stays constant through both resizes.
  gp::GrootImageGeometry tiny;
  tiny.target_height = tiny.target_width = 48;
  tiny.crop_height = 44;
  const auto flat = gp::groot_transform_images_for_vlm(torch::full({2, 3, 40, 56}, 77, torch::kUInt8), tiny);
  CHECK(gproc_equal(flat, torch::full({2, 3, 48, 48}, 77, torch::kUInt8)));
  CHECK(gproc_mentions(lrhost::test::error_of<lrhost::util::DataError>([&] {
                         gp::groot_transform_images_for_vlm(torch::zeros({3, 8, 8}, torch::kUInt8), tiny);
                       }),
                       "uint8 images (N, C, H, W)"));
}

TEST_CASE("groot images: smart_resize as transformers computes it") {
  CHECK(gp::qwen2vl_smart_resize(256, 256, 32, 65536, 16777216) == std::pair<int64_t, int64_t>{256, 256});
  CHECK(gp::qwen2vl_smart_resize(48, 48, 16, 256, 16777216) == std::pair<int64_t, int64_t>{48, 48});
  CHECK(gp::qwen2vl_smart_resize(40, 56, 16, 256, 16777216) == std::pair<int64_t, int64_t>{32, 64});  // round half even
  CHECK(gp::qwen2vl_smart_resize(1000, 1000, 28, 3136, 1003520) == std::pair<int64_t, int64_t>{980, 980});
  CHECK(gp::qwen2vl_smart_resize(10, 10, 28, 3136, 1003520) == std::pair<int64_t, int64_t>{56, 56});
  CHECK(gp::qwen2vl_smart_resize(30, 50, 28, 3136, 1003520) == std::pair<int64_t, int64_t>{56, 84});
  CHECK(gproc_mentions(
      lrhost::test::error_of<lrhost::util::DataError>([] { gp::qwen2vl_smart_resize(1, 201, 16, 1, 1 << 30); }),
      "aspect ratio"));
}

TEST_CASE("groot images: the Qwen2-VL patchify order, the temporal repeat and the fused normalisation") {
  const auto image = torch::arange(3 * 16 * 16, torch::kInt64).remainder(256).to(torch::kUInt8).view({1, 3, 16, 16});
  gp::QwenImageProcessorConfig config;
  config.patch_size = 8;
  config.min_pixels = 256;
  const auto out = gp::qwen2vl_preprocess_images(image, config);
  REQUIRE(out.pixel_values.sizes() == torch::IntArrayRef({4, 3 * 2 * 8 * 8}));
  CHECK(gproc_equal(out.image_grid_thw, torch::tensor({1, 2, 2}, torch::kInt64).view({1, 3})));
  // Patch 1 is the merged block's (row 0, col 1); element (c 2, t 1, i 3, j 5) is pixel (2, 3, 8 + 5).
  const float pixel = image[0][2][3][13].item<float>();
  CHECK(out.pixel_values[1][2 * 128 + 1 * 64 + 3 * 8 + 5].item<float>() == (pixel - 127.5f) / 127.5f);
  // Both temporal copies are the same frame.
  const auto per_t = out.pixel_values.view({4, 3, 2, 64});
  CHECK(torch::equal(per_t.select(2, 0), per_t.select(2, 1)));
  CHECK(out.pixel_values.max().item<float>() == 1.0f);
  // A size that is not a multiple of patch * merge without resizing is refused.
  config.do_resize = false;
  CHECK(gproc_mentions(lrhost::test::error_of<lrhost::util::DataError>([&] {
                         gp::qwen2vl_preprocess_images(torch::zeros({1, 3, 24, 16}, torch::kUInt8), config);
                       }),
                       "multiple of patch_size * merge_size = 16"));
}
