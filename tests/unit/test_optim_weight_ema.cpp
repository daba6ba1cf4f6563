// The EMA of the weights (host/optim/ema_settings, weight_ema): the decay rule of diffusers'
// EMAModel as LeRobot main configures it (warm-up schedule, clamps, a constant decay as min = max,
// decay 0 at the first update and up to update_after_step), the settings' checks in LeRobot's words,
// the update's arithmetic bit for bit against `s - (1 - d) * (s - p)` (fp32 and bf16 weights, tensors
// of several dtypes in one EMA), the swap in and out, the state's checks, and the optimizer hook that
// moves the EMA only after an applied step, and attach_weight_ema (what lr.optim.ema builds).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cmath>

#include "host/optim/ema_settings.hpp"
#include "host/optim/optimizer.hpp"
#include "host/optim/weight_ema.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace {

using lrhost::optim::ema_decay;
using lrhost::optim::EmaSettings;
using lrhost::optim::WeightEma;
using lrhost::util::ConfigError;
using lrhost::util::DataError;
using nlohmann::json;

EmaSettings settings_of(json table) {
  table["enable"] = true;
  return EmaSettings::read(table, "ema");
}

}  // namespace

TEST_CASE("ema: the decay is diffusers' warm-up schedule, clamped, 0 at the first update") {
  const auto defaults = settings_of(json::object());
  CHECK(ema_decay(defaults, 1) == 0.0);
  // s = step - 1: 1 - (1 + s)^-0.75.
  CHECK(ema_decay(defaults, 2) == 1.0 - std::pow(2.0, -0.75));
  CHECK(ema_decay(defaults, 11) == 1.0 - std::pow(11.0, -0.75));
  // Far out, the max_decay clamp (0.9999) holds.
  CHECK(ema_decay(defaults, 100000000) == 0.9999);
  // update_after_step: copies up to and including that step + 1.
  const auto after = settings_of({{"update_after_step", 3}});
  CHECK(ema_decay(after, 4) == 0.0);
  CHECK(ema_decay(after, 5) == 1.0 - std::pow(2.0, -0.75));
  // inv_gamma and power.
  const auto shaped = settings_of({{"inv_gamma", 2.0}, {"power", 2.0 / 3.0}});
  CHECK(ema_decay(shaped, 3) == 1.0 - std::pow(1.0 + 2.0 / 2.0, -2.0 / 3.0));
  // min_decay lifts early decays.
  const auto floor = settings_of({{"min_decay", 0.5}});
  CHECK(ema_decay(floor, 2) == 0.5);
  // A constant decay is min = max = d, yet the first update still copies (LeRobot main's translation).
  const auto constant = settings_of({{"decay", 0.99}});
  CHECK(ema_decay(constant, 1) == 0.0);
  CHECK(ema_decay(constant, 2) == 0.99);
  CHECK(ema_decay(constant, 500) == 0.99);
}

TEST_CASE("ema: the settings refuse what LeRobot's EMAConfig refuses, naming the key") {
  auto refused = [](json table) { return lrhost::test::error_of<ConfigError>([&] { settings_of(table); }); };
  CHECK(refused({{"min_decay", 0.6}, {"max_decay", 0.5}}).find("0 <= min_decay <= max_decay <= 1") !=
        std::string::npos);
  CHECK(refused({{"max_decay", 1.5}}).find("max_decay=1.5") != std::string::npos);
  CHECK(refused({{"inv_gamma", 0}}).find("ema.inv_gamma must be positive") != std::string::npos);
  CHECK(refused({{"power", -1}}).find("ema.power must be positive") != std::string::npos);
  CHECK(refused({{"update_after_step", -1}}).find("ema.update_after_step must be >= 0") != std::string::npos);
  CHECK(refused({{"decay", 1.5}}).find("ema.decay must be in [0, 1]") != std::string::npos);
  CHECK(refused({{"decay", -0.5}}).find("ema.decay must be in [0, 1]") != std::string::npos);
  CHECK(refused({{"decay", 0.99}, {"max_decay", 0.999}}).find("mutually exclusive") != std::string::npos);
  CHECK(refused({{"decays", 0.99}}).find("decays") != std::string::npos);
  // The recipe default holds every key, EMA off, no constant decay.
  const auto table = lrhost::optim::default_ema_table();
  CHECK(table["enable"] == false);
  CHECK(table["decay"] == -1);
  CHECK_FALSE(EmaSettings::read(json::parse(table.dump()), "ema").decay.has_value());
}

TEST_CASE("ema: each update is s - (1 - d) * (s - p) bit for bit, in fp32 whatever the weights' dtype") {
  torch::manual_seed(3);
  // Several dtypes in one EMA: the update groups them into chunks of one dtype.
  auto a = torch::randn({7, 5});
  auto b = torch::randn({3}).to(torch::kBFloat16);
  auto c = torch::randn({4, 4});
  WeightEma ema(settings_of(json::object()), {{"a", a}, {"b", b}, {"c", c}});
  CHECK(ema.shadow_bytes() == (35 + 3 + 16) * 4);
  CHECK((ema.shadow("b").scalar_type() == torch::kFloat32));
  std::map<std::string, torch::Tensor> expected{{"a", a.clone()}, {"b", b.to(torch::kFloat32)}, {"c", c.clone()}};
  for (int64_t step = 1; step <= 6; ++step) {
    torch::NoGradGuard no_grad;
    a.add_(torch::randn_like(a));
    b.add_(torch::randn_like(b));
    c.mul_(0.5);
    ema.update();
    const double d = ema_decay(ema.settings(), step);
    CHECK(ema.last_decay() == d);
    CHECK(ema.optimization_step() == step);
    for (auto& [name, shadow] : expected) {
      auto param = name == "a" ? a : name == "b" ? b : c;
      shadow = shadow.sub((shadow - param).mul(1.0 - d));
      CAPTURE(name);
      CHECK(torch::equal(ema.shadow(name), shadow));
    }
  }
  // Step 1 made the shadow the weights exactly as diffusers' s - 1 * (s - p) does (not a plain copy).
  CHECK_THROWS_AS(ema.shadow("d"), ConfigError);
}

TEST_CASE("ema: swap_in puts the EMA weights in, swap_out the live ones back, exactly") {
  torch::manual_seed(4);
  auto fp32 = torch::randn({6});
  auto bf16 = torch::randn({5}).to(torch::kBFloat16);
  WeightEma ema(settings_of(json::object()), {{"fp32", fp32}, {"bf16", bf16}});
  {
    torch::NoGradGuard no_grad;
    fp32.add_(1.0);
    bf16.add_(1.0);
  }
  ema.update();  // decay 0: the shadow is the new weights
  {
    torch::NoGradGuard no_grad;
    fp32.add_(1.0);
    bf16.add_(1.0);
  }
  ema.update();
  const auto live32 = fp32.clone(), live16 = bf16.clone();
  const auto shadow32 = ema.shadow("fp32").clone(), shadow16 = ema.shadow("bf16").clone();
  ema.swap_in();
  CHECK(ema.swapped_in());
  CHECK(torch::equal(fp32, shadow32));
  CHECK(torch::equal(bf16, shadow16.to(torch::kBFloat16)));
  CHECK(lrhost::test::error_of<ConfigError>([&] { ema.update(); }).find("swapped in") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([&] { ema.swap_in(); }).find("already") != std::string::npos);
  ema.swap_out();
  CHECK(torch::equal(fp32, live32));
  CHECK(torch::equal(bf16, live16));
  CHECK(torch::equal(ema.shadow("fp32"), shadow32));
  CHECK(torch::equal(ema.shadow("bf16"), shadow16));
  CHECK(lrhost::test::error_of<ConfigError>([&] { ema.swap_out(); }).find("without swap_in") != std::string::npos);
}

TEST_CASE("ema: the saved state restores the step and shadows; mismatches are DataErrors naming the file") {
  auto w = torch::randn({3, 2});
  WeightEma ema(settings_of({{"decay", 0.9}}), {{"w", w}});
  ema.update();
  ema.update();
  const auto json_state = json::parse(ema.state_json().dump());
  CHECK(json_state["optimization_step"] == 2);
  WeightEma other(settings_of({{"decay", 0.9}}), {{"w", torch::zeros({3, 2})}});
  other.load_step(json_state, "ema_state.json");
  other.load_shadows({{"w", ema.shadow("w")}}, "ema_shadow.safetensors");
  CHECK(other.optimization_step() == 2);
  CHECK(torch::equal(other.shadow("w"), ema.shadow("w")));
  CHECK(lrhost::test::error_of<DataError>([&] {
          other.load_shadows({{"v", w}}, "F");
        }).find("F: the EMA shadows do not match") != std::string::npos);
  CHECK(lrhost::test::error_of<DataError>([&] {
          other.load_shadows({{"w", torch::zeros({2})}}, "F");
        }).find("'w' is [2]") != std::string::npos);
  CHECK(lrhost::test::error_of<DataError>([&] {
          other.load_step(json{{"format", 7}}, "G");
        }).find("G: not an lrhost EMA state") != std::string::npos);
  // A resume without EMA state restarts the shadow from the weights, at step 0.
  other.reset_to_parameters();
  CHECK(other.optimization_step() == 0);
  CHECK(torch::equal(other.shadow("w"), torch::zeros({3, 2})));
}

TEST_CASE("ema: the optimizer runs its after-step callbacks only when a step is applied") {
  auto w = torch::ones({2}, torch::requires_grad());
  lrhost::optim::Optimizer opt("sgd", {{"all", {w}, {}, {}}}, json{{"lr", 0.1}});
  int calls = 0;
  opt.add_after_step([&] { ++calls; });
  bool allow = false;
  opt.set_step_hooks([&](lrhost::optim::Optimizer&) { return allow; }, [] { return true; });
  w.mutable_grad() = torch::ones({2});
  CHECK_FALSE(opt.step());  // declined (an accumulation micro-step, a skipped non-finite step)
  CHECK(calls == 0);
  allow = true;
  CHECK(opt.step());
  CHECK(calls == 1);
  opt.note_captured_step();  // a replayed CUDA graph's update
  CHECK(calls == 2);
}

TEST_CASE("ema: attach_weight_ema tracks what the optimizer trains and moves with its applied steps") {
  auto trained = torch::ones({3}, torch::requires_grad());
  auto frozen = torch::ones({2});
  lrhost::optim::Optimizer opt("sgd", {{"all", {trained}, {}, {}}}, json{{"lr", 0.5}});
  const std::vector<std::pair<std::string, torch::Tensor>> named{{"trained", trained}, {"frozen", frozen}};
  auto ema = lrhost::optim::attach_weight_ema(settings_of(json::object()), named, opt, false, true);
  REQUIRE(ema != nullptr);
  CHECK(ema->shadows().size() == 1);  // the frozen parameter is not tracked
  trained.mutable_grad() = torch::ones({3});
  opt.step();
  CHECK(ema->optimization_step() == 1);
  CHECK(torch::equal(ema->shadow("trained"), torch::full({3}, 0.5)));  // decay 0: the new weights
  // on_main_only: a rank other than 0 keeps none; under FSDP it is refused.
  CHECK(lrhost::optim::attach_weight_ema(settings_of({{"on_main_only", true}}), named, opt, false, false) == nullptr);
  CHECK(lrhost::test::error_of<ConfigError>([&] {
          lrhost::optim::attach_weight_ema(settings_of({{"on_main_only", true}}), named, opt, true, true);
        }).find("under FSDP") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([&] {
          lrhost::optim::attach_weight_ema(EmaSettings::read(json::object(), "ema"), named, opt, false, true);
        }).find("ema.enable is false") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([&] {
          lrhost::optim::attach_weight_ema(settings_of(json::object()), {{"frozen", frozen}}, opt, false, true);
        }).find("trains none") != std::string::npos);
}
