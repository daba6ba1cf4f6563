// Unit tests of the VLA parts shared by SmolVLA and pi0/pi05 (host/policy/common and the resize of
// host/nn/image_preprocess): Beta time sampling statistics and reproducibility, the x_t / u_t
// formulas, attention masks and positions on hand-checked token layouts, the prefix-cache suffix
// variants against the full-sequence ones, the Euler loop on toy velocity fields with closed forms,
// and resize_with_pad in both padding placements. (Bit-level parity with LeRobot is checked through
// SmolVLA by tests/interop/run_smolvla_interop.sh.)
#include <ATen/CPUGeneratorImpl.h>
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "host/nn/gemma_decoder_layer.hpp"
#include "host/nn/image_preprocess.hpp"
#include "host/policy/common/flow_matching.hpp"
#include "host/policy/common/prefix_suffix_masks.hpp"
#include "host/util/error.hpp"

namespace vla_common_test {

namespace common = lrhost::policy::common;
namespace nn = lrhost::nn;
namespace util = lrhost::util;

// (rows of 0/1) -> (1, N, M) bool, for writing expected masks by hand.
torch::Tensor bool_matrix(const std::vector<std::vector<int>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  const auto n = static_cast<int64_t>(rows.size());
  return torch::tensor(flat, torch::kInt64).view({1, n, -1}).to(torch::kBool);
}

torch::Tensor flags(const std::vector<int64_t>& values) {
  return torch::tensor(values, torch::kInt64).unsqueeze(0);
}

TEST_CASE("vla common: Beta time sampling has Beta(1.5, 1) statistics and is reproducible from a seed") {
  const int64_t n = 200000;
  auto time = common::sample_time_beta(n, torch::kCPU, {}, at::detail::createCPUGenerator(1234));
  REQUIRE(time.sizes() == c10::IntArrayRef{n});
  CHECK((time.scalar_type() == torch::kFloat32));
  CHECK(time.min().item<double>() >= 0.001);
  CHECK(time.max().item<double>() <= 1.0);
  // Beta(1.5, 1): mean 0.6, variance 1.5 / (2.5² · 3.5), CDF x^1.5; then ·0.999 + 0.001.
  const double mean = 0.6 * 0.999 + 0.001;
  const double variance = 1.5 / (6.25 * 3.5) * 0.999 * 0.999;
  CHECK(time.mean().item<double>() == doctest::Approx(mean).epsilon(0.005));
  CHECK(time.to(torch::kFloat64).var().item<double>() == doctest::Approx(variance).epsilon(0.02));
  auto beta = (time.to(torch::kFloat64) - 0.001) / 0.999;
  CHECK((beta <= 0.25).to(torch::kFloat64).mean().item<double>() == doctest::Approx(0.125).epsilon(0.03));

  // The same seed gives the same draw, through an explicit generator or the default one.
  CHECK(torch::equal(time, common::sample_time_beta(n, torch::kCPU, {}, at::detail::createCPUGenerator(1234))));
  CHECK_FALSE(torch::equal(time, common::sample_time_beta(n, torch::kCPU, {}, at::detail::createCPUGenerator(4321))));
  torch::manual_seed(7);
  auto first = common::sample_time_beta(16, torch::kCPU);
  torch::manual_seed(7);
  CHECK(torch::equal(first, common::sample_time_beta(16, torch::kCPU)));

  // Other shapes and the affine map: Beta(2, 2) without scaling has mean 1/2 and variance 1/20.
  auto symmetric = common::sample_time_beta(n, torch::kCPU, {.alpha = 2, .beta = 2, .scale = 1, .offset = 0},
                                            at::detail::createCPUGenerator(5));
  CHECK(symmetric.mean().item<double>() == doctest::Approx(0.5).epsilon(0.01));
  CHECK(symmetric.to(torch::kFloat64).var().item<double>() == doctest::Approx(0.05).epsilon(0.02));
  CHECK_THROWS_AS(common::sample_time_beta(2, torch::kCPU, {.alpha = 0}), util::ConfigError);

  auto noise = common::sample_noise({4, 3, 2}, torch::kCPU);
  CHECK((noise.scalar_type() == torch::kFloat32));
  CHECK(noise.sizes() == c10::IntArrayRef{4, 3, 2});
}

TEST_CASE("vla common: x_t = t·noise + (1 − t)·actions and u_t = noise − actions, per sample") {
  auto actions = torch::tensor({1.0f, -2.0f, 0.5f, 4.0f}).view({2, 1, 2});
  auto noise = torch::tensor({3.0f, 6.0f, -1.0f, 0.0f}).view({2, 1, 2});
  auto time = torch::tensor({0.25f, 1.0f});
  auto noisy = common::noisy_actions(actions, noise, time);
  // Sample 0 at t = 1/4: 0.25·3 + 0.75·1 = 1.5, 0.25·6 + 0.75·(−2) = 0; sample 1 at t = 1 is the noise.
  CHECK(torch::equal(noisy.x_t, torch::tensor({1.5f, 0.0f, -1.0f, 0.0f}).view({2, 1, 2})));
  CHECK(torch::equal(noisy.u_t, torch::tensor({2.0f, 8.0f, -1.5f, -4.0f}).view({2, 1, 2})));
  // t = 0 gives the actions back; the direction from actions to noise is u_t whatever t.
  auto at_zero = common::noisy_actions(actions, noise, torch::zeros({2}));
  CHECK(torch::equal(at_zero.x_t, actions));
  // Any rank: (B, D) actions.
  auto flat = common::noisy_actions(actions.view({2, 2}), noise.view({2, 2}), time);
  CHECK(torch::equal(flat.x_t, noisy.x_t.view({2, 2})));
  CHECK_THROWS_AS(common::noisy_actions(actions, noise, torch::zeros({3})), util::DataError);
  CHECK_THROWS_AS(common::noisy_actions(actions, noise.view({2, 2}), time), util::DataError);

  CHECK_THROWS_AS(common::sinusoidal_time_embedding(time, 7, 4e-3, 4.0), util::ConfigError);
}

TEST_CASE("vla common: block masks and positions from pad and ar flags (SmolVLA and pi0 layouts)") {
  // SmolVLA: 2 image tokens, 1 padded language token, state (ar 1), 2 actions (ar 1 each).
  auto pad = flags({1, 1, 0, 1, 1, 1}).to(torch::kBool);
  auto ar = flags({0, 0, 0, 1, 1, 1});
  auto expected = bool_matrix({{1, 1, 0, 0, 0, 0},
                               {1, 1, 0, 0, 0, 0},
                               {0, 0, 0, 0, 0, 0},
                               {1, 1, 0, 1, 0, 0},
                               {1, 1, 0, 1, 1, 0},
                               {1, 1, 0, 1, 1, 1}});
  CHECK(torch::equal(common::make_att_2d_masks(pad, ar), expected));
  CHECK(torch::equal(common::positions_from_pad_masks(pad), flags({0, 1, 1, 2, 3, 4})));

  // pi0: 2 prefix tokens, state (ar 1), first action ar 1, the other actions 0: the actions see each
  // other in both directions, and the state does not see them.
  pad = torch::ones({1, 6}, torch::kBool);
  ar = flags({0, 0, 1, 1, 0, 0});
  expected = bool_matrix({{1, 1, 0, 0, 0, 0},
                          {1, 1, 0, 0, 0, 0},
                          {1, 1, 1, 0, 0, 0},
                          {1, 1, 1, 1, 1, 1},
                          {1, 1, 1, 1, 1, 1},
                          {1, 1, 1, 1, 1, 1}});
  CHECK(torch::equal(common::make_att_2d_masks(pad, ar), expected));

  // Rows of a batch are independent; an empty camera (masked tokens) repeats the previous position.
  auto pad2 = torch::tensor({{1, 1, 1, 1}, {0, 0, 1, 1}}).to(torch::kBool);
  auto ar2 = torch::tensor({{0, 0, 0, 1}, {0, 0, 0, 1}}, torch::kInt64);
  auto masks = common::make_att_2d_masks(pad2, ar2);
  CHECK(masks[0][0][3].item<bool>() == false);
  CHECK(masks[1][2][0].item<bool>() == false);
  CHECK(masks[1][3][2].item<bool>());
  CHECK(torch::equal(common::positions_from_pad_masks(pad2), torch::tensor({{0, 1, 2, 3}, {-1, -1, 0, 1}})));
  CHECK_THROWS_AS(common::make_att_2d_masks(pad2[0], ar2), util::DataError);
}

TEST_CASE("vla common: the prefix-cache suffix mask and positions are the suffix rows of the full ones") {
  // Batch of 2; prefix of 4 with padding, suffix of 3 causal action tokens. (Action tokens are never
  // padded: a padded suffix query would still see the prefix here, as in LeRobot, unlike the full mask.)
  auto prefix_pad = torch::tensor({{1, 1, 0, 1}, {1, 0, 0, 1}}).to(torch::kBool);
  auto prefix_ar = torch::tensor({{0, 0, 0, 1}, {0, 0, 0, 1}}, torch::kInt64);
  auto suffix_pad = torch::ones({2, 3}, torch::kBool);
  auto suffix_ar = torch::ones({2, 3}, torch::kInt64);
  auto full_mask =
      common::make_att_2d_masks(torch::cat({prefix_pad, suffix_pad}, 1), torch::cat({prefix_ar, suffix_ar}, 1));
  auto full_positions = common::positions_from_pad_masks(torch::cat({prefix_pad, suffix_pad}, 1));

  auto mask = common::suffix_attention_mask(prefix_pad, suffix_pad, suffix_ar);
  REQUIRE(mask.sizes() == c10::IntArrayRef{2, 3, 7});
  CHECK(torch::equal(mask, full_mask.slice(1, 4)));
  auto positions = common::suffix_positions(prefix_pad, suffix_pad);
  CHECK(torch::equal(positions, full_positions.slice(1, 4)));
  CHECK(torch::equal(positions, torch::tensor({{3, 4, 5}, {2, 3, 4}})));

  auto additive = lrhost::nn::additive_attention_mask(mask);
  REQUIRE(additive.sizes() == c10::IntArrayRef{2, 1, 3, 7});
  CHECK((additive.scalar_type() == torch::kFloat32));
  CHECK(additive[0][0][0][0].item<float>() == 0.0F);
  CHECK(additive[0][0][0][2].item<float>() == -2.3819763e38F);
  CHECK(torch::equal(additive.eq(0).squeeze(1), mask));
  CHECK_THROWS_AS(lrhost::nn::additive_attention_mask(mask.to(torch::kFloat32)), util::DataError);
}

TEST_CASE("vla common: the Euler loop on toy velocity fields matches their closed forms") {
  auto noise = torch::tensor({1.0f, -2.0f, 0.5f, 3.0f}).view({2, 2});
  // Constant field: exact after any number of steps, x(0) = x(1) − c.
  auto constant = common::euler_integrate(
      noise, 7, [](const torch::Tensor& x, const torch::Tensor&) { return torch::full_like(x, 0.5); });
  CHECK(torch::allclose(constant, noise - 0.5, 0, 1e-5));

  // The times handed to the field: fp32 (B,), 1.0, 0.9, ..., 0.1 (computed in double, rounded once).
  std::vector<float> seen;
  common::euler_integrate(noise, 10, [&](const torch::Tensor& x, const torch::Tensor& t) {
    CHECK(t.sizes() == c10::IntArrayRef{2});
    CHECK((t.scalar_type() == torch::kFloat32));
    CHECK(t[0].item<float>() == t[1].item<float>());
    seen.push_back(t[0].item<float>());
    return torch::zeros_like(x);
  });
  REQUIRE(seen.size() == 10);
  for (int s = 0; s < 10; ++s) CHECK(seen[static_cast<std::size_t>(s)] == static_cast<float>(1.0 + s * (-1.0 / 10)));

  // v = t: Euler sums dt·(1 + k·dt) = −(N + 1)/(2N); the ODE's exact answer −1/2 is the limit.
  auto time_field = [](const torch::Tensor& x, const torch::Tensor& t) { return t.unsqueeze(1).expand_as(x); };
  auto ten = common::euler_integrate(torch::zeros({2, 2}), 10, time_field);
  CHECK(torch::allclose(ten, torch::full({2, 2}, -0.55), 0, 1e-6));

  // v = x (dx/dt = x, integrated backwards): Euler gives x·(1 − 1/N)^N, which tends to x·e^−1.
  auto linear = [](const torch::Tensor& x, const torch::Tensor&) { return x; };
  auto five = common::euler_integrate(noise, 5, linear);
  CHECK(torch::allclose(five, noise * std::pow(0.8, 5), 1e-5, 1e-6));
  auto many = common::euler_integrate(noise.to(torch::kFloat64), 4000, linear);
  CHECK(torch::allclose(many, noise.to(torch::kFloat64) * std::exp(-1.0), 1e-3, 1e-4));

  CHECK_THROWS_AS(common::euler_integrate(noise, 0, linear), util::ConfigError);
  // A velocity of another shape is refused instead of broadcasting into x_t.
  CHECK_THROWS_AS(common::euler_integrate(noise, 2,
                                          [](const torch::Tensor& x, const torch::Tensor&) {
                                            return torch::zeros({x.size(0), 1});
                                          }),
                  util::DataError);
}

TEST_CASE("vla common: resize_with_pad pads top-left (SmolVLA) or centred (pi0), with an optional clamp") {
  // 24x40 into 32x32: ratio 1.25, resized to 19x32, 13 rows of padding.
  auto ones = torch::ones({1, 1, 24, 40});
  auto top_left = nn::resize_with_pad(ones, 32, 32, 0.0);
  CHECK(torch::equal(top_left.narrow(2, 0, 13), torch::zeros({1, 1, 13, 32})));
  CHECK(torch::equal(top_left.narrow(2, 13, 19), torch::ones({1, 1, 19, 32})));
  // Centred: divmod(13, 2) = 6 rows on top, 7 below (reference pi0.md §4.1).
  const nn::ResizeWithPadOptions centered{.placement = nn::PadPlacement::centered};
  auto middle = nn::resize_with_pad(ones, 32, 32, 0.0, centered);
  CHECK(torch::equal(middle.narrow(2, 0, 6), torch::zeros({1, 1, 6, 32})));
  CHECK(torch::equal(middle.narrow(2, 6, 19), torch::ones({1, 1, 19, 32})));
  CHECK(torch::equal(middle.narrow(2, 25, 7), torch::zeros({1, 1, 7, 32})));
  // Portrait: the columns are split the same way; same resized pixels as the top-left placement.
  auto tall = nn::resize_with_pad(torch::rand({2, 3, 40, 24}), 32, 32, -1.0, centered);
  CHECK(torch::equal(tall.narrow(3, 0, 6), torch::full({2, 3, 32, 6}, -1.0)));
  CHECK(torch::equal(tall.narrow(3, 25, 7), torch::full({2, 3, 32, 7}, -1.0)));
  auto source = torch::rand({1, 3, 40, 24});
  CHECK(torch::equal(nn::resize_with_pad(source, 32, 32, 0.0, centered).narrow(3, 6, 19),
                     nn::resize_with_pad(source, 32, 32, 0.0).narrow(3, 13, 19)));

  // The clamp applies to resized pixels only; an image already at the box size is returned as is.
  auto out_of_range = torch::full({1, 1, 24, 40}, 2.0);
  const nn::ResizeWithPadOptions clamped{.placement = nn::PadPlacement::centered, .clamp_to_unit = true};
  CHECK(nn::resize_with_pad(out_of_range, 32, 32, 0.0, clamped).max().item<double>() == 1.0);
  CHECK(nn::resize_with_pad(out_of_range, 32, 32, 0.0).max().item<double>() == 2.0);
  auto same = torch::full({1, 1, 32, 32}, 2.0);
  CHECK(nn::resize_with_pad(same, 32, 32, 0.0, clamped).is_same(same));

  // The signed variant maps [0, 1] to [−1, 1]: the padding becomes −1 in either placement.
  auto grey = torch::full({1, 3, 24, 40}, 0.5);
  auto signed_centered = nn::resize_with_pad_signed(grey, 32, 32, centered);
  CHECK(torch::equal(signed_centered.narrow(2, 0, 6), torch::full({1, 3, 6, 32}, -1.0)));
  CHECK(torch::allclose(signed_centered.narrow(2, 6, 19), torch::zeros({1, 3, 19, 32})));
  auto signed_top_left = nn::resize_with_pad_signed(grey, 32, 32);
  CHECK(torch::equal(signed_top_left.narrow(2, 0, 13), torch::full({1, 3, 13, 32}, -1.0)));
}

}  // namespace vla_common_test
