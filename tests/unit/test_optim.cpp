// Unit tests of host/optim: optimizer steps against hand-computed values, per-group options,
// option validation, gradient clipping, and scheduler factors at given steps.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cmath>
#include <numbers>

#include "host/optim/optimizer.hpp"
#include "host/optim/scheduler.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::optim::LrScheduler;
using lrhost::optim::Optimizer;
using lrhost::optim::ParamGroup;
using lrhost::optim::ScheduleSpec;
using lrhost::util::ConfigError;
using nlohmann::json;

namespace {
// One scalar parameter p = value with gradient `grad`.
torch::Tensor param(double value) {
  return torch::full({1}, value, torch::dtype(torch::kFloat64).requires_grad(true));
}
void set_grad(torch::Tensor& p, double grad) {
  p.mutable_grad() = torch::full({1}, grad, torch::kFloat64);
}
std::vector<ParamGroup> group_of(torch::Tensor p) {
  return {ParamGroup{"g", {p}, {}, {}}};
}
}  // namespace

TEST_CASE("SGD with momentum matches the hand-computed trajectory") {
  auto p = param(1.0);
  Optimizer opt("sgd", group_of(p), json{{"lr", 0.1}, {"momentum", 0.9}});
  set_grad(p, 2.0);
  opt.step();  // v = 2, p = 1 - 0.1 * 2
  CHECK(p.item<double>() == doctest::Approx(0.8));
  set_grad(p, 2.0);
  opt.step();  // v = 0.9 * 2 + 2 = 3.8, p = 0.8 - 0.38
  CHECK(p.item<double>() == doctest::Approx(0.42));
}

TEST_CASE("AdamW applies decoupled weight decay then the bias-corrected step") {
  auto p = param(1.0);
  Optimizer opt("adamw", group_of(p), json{{"lr", 0.1}, {"weight_decay", 0.01}});
  set_grad(p, 2.0);
  opt.step();  // p *= 1 - lr*wd; m_hat/sqrt(v_hat) = 1, so p -= lr
  CHECK(p.item<double>() == doctest::Approx(1.0 * (1 - 0.1 * 0.01) - 0.1).epsilon(1e-7));
}

TEST_CASE("Adam adds L2 weight decay to the gradient") {
  auto p = param(1.0);
  Optimizer opt("adam", group_of(p), json{{"lr", 0.1}, {"weight_decay", 0.01}});
  set_grad(p, 2.0);
  opt.step();  // g = 2 + 0.01 * 1; the first Adam step moves by lr regardless of |g|
  CHECK(p.item<double>() == doctest::Approx(0.9).epsilon(1e-7));
}

TEST_CASE("per-group lr and weight decay override the optimizer options") {
  auto a = param(1.0), b = param(1.0);
  std::vector<ParamGroup> groups{{"backbone", {a}, 0.01, 0.0}, {"rest", {b}, std::nullopt, std::nullopt}};
  Optimizer opt("sgd", groups, json{{"lr", 0.1}});
  CHECK(opt.num_groups() == 2);
  CHECK(opt.lr(0) == doctest::Approx(0.01));
  CHECK(opt.lr(1) == doctest::Approx(0.1));
  set_grad(a, 1.0);
  set_grad(b, 1.0);
  opt.step();
  CHECK(a.item<double>() == doctest::Approx(0.99));
  CHECK(b.item<double>() == doctest::Approx(0.9));
  opt.zero_grad();
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("bad optimizer options are errors naming the option") {
  auto p = param(1.0);
  auto message = [&](const std::string& kind, const json& options) {
    try {
      Optimizer opt(kind, group_of(p), options);
    } catch (const ConfigError& e) {
      return lrhost::util::describe(e);
    }
    return std::string();
  };
  CHECK(message("adamw", {{"lr", -1}}).find("'lr' must be > 0") != std::string::npos);
  CHECK(message("adamw", {{"betas", {0.9}}}).find("'betas' must be two numbers") != std::string::npos);
  CHECK(message("adamw", {{"momentum", 0.9}}).find("unknown option 'momentum'") != std::string::npos);
  CHECK(message("adamw", {{"weight_decy", 0.1}}).find("did you mean 'weight_decay'") != std::string::npos);
  CHECK(message("sgd", {{"nesterov", true}}).find("nesterov needs momentum") != std::string::npos);
  CHECK(message("lion", {}).find("optimizer must be one of 'adamw', 'adam', 'sgd', got 'lion'") != std::string::npos);
  CHECK(message("sgd", {{"lr", "fast"}}).find("'lr' must be a number") != std::string::npos);
  // grad_clip_norm belongs to the loop, not the optimizer, but may sit in the same table.
  CHECK(message("adamw", {{"grad_clip_norm", 10}}).empty());
  CHECK_THROWS_AS(Optimizer("sgd", {ParamGroup{"empty", {}, {}, {}}}, json::object()), ConfigError);
}

TEST_CASE("read_param_group: a recipe's group table with its types checked and unknown keys refused") {
  auto p = param(1.0);
  auto group = lrhost::optim::read_param_group(json{{"name", "backbone"}, {"lr", 1e-5}, {"params", nullptr}}, {p},
                                               "optimizer groups[1]", "group1");
  CHECK(group.name == "backbone");
  CHECK(group.lr == 1e-5);
  CHECK_FALSE(group.weight_decay.has_value());
  CHECK(group.params.size() == 1);
  auto unnamed = lrhost::optim::read_param_group(json::object(), {p}, "optimizer groups[2]", "group2");
  CHECK(unnamed.name == "group2");
  CHECK_FALSE(unnamed.lr.has_value());
  auto message = [&](const json& options) {
    return lrhost::test::error_of<ConfigError>(
        [&] { lrhost::optim::read_param_group(options, {p}, "optimizer groups[3]", "group3"); });
  };
  CHECK(message({{"lr", "x"}}).find("optimizer groups[3]: 'lr' must be a number, got \"x\"") == 0);
  CHECK(message({{"weight_decy", 0.1}}).find("optimizer groups[3]: unknown option 'weight_decy'") == 0);
  CHECK(message({{"weight_decy", 0.1}}).find("did you mean 'weight_decay'") != std::string::npos);
}

TEST_CASE("clip_grad_norm scales gradients to the global norm") {
  auto a = param(0.0), b = param(0.0);
  Optimizer opt("sgd", {ParamGroup{"g", {a, b}, {}, {}}}, json{{"lr", 1.0}});
  set_grad(a, 3.0);
  set_grad(b, 4.0);
  double norm = opt.clip_grad_norm(1.0);
  CHECK(norm == doctest::Approx(5.0));
  CHECK(a.grad().item<double>() == doctest::Approx(0.6).epsilon(1e-5));
  CHECK(b.grad().item<double>() == doctest::Approx(0.8).epsilon(1e-5));
  CHECK_THROWS_AS(opt.clip_grad_norm(0.0), ConfigError);
}

TEST_CASE("schedule factors at given steps") {
  ScheduleSpec cosine{"cosine_with_warmup", 10, 110, 0.5};
  CHECK(cosine.factor(0) == 0.0);
  CHECK(cosine.factor(5) == doctest::Approx(0.5));
  CHECK(cosine.factor(10) == doctest::Approx(1.0));
  CHECK(cosine.factor(35) == doctest::Approx(0.5 * (1 + std::cos(std::numbers::pi * 0.25))));
  CHECK(cosine.factor(60) == doctest::Approx(0.5));
  CHECK(cosine.factor(110) == doctest::Approx(0.0));
  // Past total_steps the formula is not clamped, exactly as Hugging Face's (and so LeRobot's)
  // cosine schedule: at progress 2 the cosine is back at its peak.
  CHECK(cosine.factor(210) == doctest::Approx(1.0));
  ScheduleSpec linear{"linear_with_warmup", 10, 110, 0.5};
  CHECK(linear.factor(60) == doctest::Approx(0.5));
  CHECK(linear.factor(200) == 0.0);
  ScheduleSpec warm{"constant_with_warmup", 10, 0, 0.5};
  CHECK(warm.factor(3) == doctest::Approx(0.3));
  CHECK(warm.factor(1000) == 1.0);
  CHECK(ScheduleSpec{}.factor(7) == 1.0);
}

TEST_CASE("the scheduler sets every group's lr from its initial lr, once per step") {
  auto a = param(1.0), b = param(1.0);
  std::vector<ParamGroup> groups{{"a", {a}, 1.0, {}}, {"b", {b}, 0.1, {}}};
  Optimizer opt("sgd", groups, json{{"lr", 1.0}});
  LrScheduler scheduler(
      opt, ScheduleSpec::from_json({{"type", "linear_with_warmup"}, {"warmup_steps", 2}, {"total_steps", 6}}));
  CHECK(opt.lr(0) == 0.0);  // factor(0) applied at construction, as LambdaLR does
  scheduler.step();
  CHECK(opt.lr(0) == doctest::Approx(0.5));
  CHECK(opt.lr(1) == doctest::Approx(0.05));
  scheduler.step();
  scheduler.step();
  CHECK(scheduler.last_step() == 3);
  CHECK(opt.lr(0) == doctest::Approx(0.75));
  scheduler.set_step(6);
  CHECK(opt.lr(0) == doctest::Approx(0.0));
}

TEST_CASE("scheduler options are validated") {
  CHECK_THROWS_AS(ScheduleSpec::from_json({{"type", "cosine"}}), ConfigError);
  CHECK_THROWS_AS(ScheduleSpec::from_json({{"type", "cosine_with_warmup"}, {"warmup_steps", 10}}), ConfigError);
  CHECK_THROWS_AS(ScheduleSpec::from_json({{"type", "constant"}, {"warmup", 10}}), ConfigError);
  CHECK_THROWS_AS(ScheduleSpec::from_json({{"warmup_steps", -1}}), ConfigError);
  CHECK(ScheduleSpec::from_json({{"type", "constant_with_warmup"}, {"warmup_steps", 5}}).warmup_steps == 5);
}

// The fused CPU step must follow LibTorch's Adam/AdamW exactly (same formulas, same state), so that
// optimizer state saved from either continues identically.
TEST_CASE("fused Adam and AdamW steps equal LibTorch's, state included") {
  for (std::string kind : {"adam", "adamw"}) {
    CAPTURE(kind);
    torch::manual_seed(3);
    auto a = torch::randn({1000, 37}).requires_grad_(true);
    auto b = torch::randn({5}).requires_grad_(true);
    auto a_ref = a.detach().clone().requires_grad_(true);
    auto b_ref = b.detach().clone().requires_grad_(true);
    Optimizer fused(kind, {ParamGroup{"g", {a, b}, std::nullopt, std::nullopt}},
                    json{{"lr", 3e-3}, {"weight_decay", 0.05}, {"betas", {0.9, 0.99}}, {"eps", 1e-6}});
    std::unique_ptr<torch::optim::Optimizer> reference;
    if (kind == "adam")
      reference = std::make_unique<torch::optim::Adam>(
          std::vector<torch::Tensor>{a_ref, b_ref},
          torch::optim::AdamOptions(3e-3).weight_decay(0.05).betas({0.9, 0.99}).eps(1e-6));
    else
      reference = std::make_unique<torch::optim::AdamW>(
          std::vector<torch::Tensor>{a_ref, b_ref},
          torch::optim::AdamWOptions(3e-3).weight_decay(0.05).betas({0.9, 0.99}).eps(1e-6));
    for (int step = 0; step < 4; ++step) {
      auto grad_a = torch::randn_like(a), grad_b = torch::randn_like(b);
      a.mutable_grad() = grad_a.clone();
      a_ref.mutable_grad() = grad_a.clone();
      b.mutable_grad() = step == 2 ? torch::Tensor() : grad_b.clone();  // a step without a gradient
      b_ref.mutable_grad() = step == 2 ? torch::Tensor() : grad_b.clone();
      fused.step();
      reference->step();
    }
    // Same op order as LibTorch's kernels; allow a last-bit difference from vectorized rounding.
    CHECK(torch::allclose(a, a_ref, 1e-6, 1e-7));
    CHECK(torch::allclose(b, b_ref, 1e-6, 1e-7));
    auto& state =
        static_cast<torch::optim::AdamParamState&>(*fused.torch_optimizer().state().at(a.unsafeGetTensorImpl()));
    auto& state_ref = static_cast<torch::optim::AdamParamState&>(*reference->state().at(a_ref.unsafeGetTensorImpl()));
    CHECK(state.step() == state_ref.step());
    // Moments of size ~1 differ by at most 2 ulp (LibTorch's vectorized kernels round differently).
    CHECK(torch::allclose(state.exp_avg(), state_ref.exp_avg(), 1e-6, 1e-6));
    CHECK(torch::allclose(state.exp_avg_sq(), state_ref.exp_avg_sq(), 1e-6, 1e-6));
    auto& state_b =
        static_cast<torch::optim::AdamParamState&>(*fused.torch_optimizer().state().at(b.unsafeGetTensorImpl()));
    CHECK(state_b.step() == 3);
  }
}

// bf16 CPU parameters (SmolVLA's expert) go through ATen's fused kernel: the update is computed in
// fp32 and rounded once, so it tracks an fp32 run at least as closely as LibTorch's per-operation
// bf16 step (fused = false), which rounds every intermediate, and stays within bf16 rounding of it.
TEST_CASE("fused bf16 Adam/AdamW on CPU: as close to fp32 as LibTorch's bf16 step, same state layout") {
  for (std::string kind : {"adam", "adamw"}) {
    CAPTURE(kind);
    torch::manual_seed(5);
    auto start = torch::randn({4096});
    json options{{"lr", 1e-2}, {"weight_decay", 0.05}, {"betas", {0.9, 0.99}}, {"eps", 1e-6}};
    auto make = [&](torch::ScalarType dtype, bool fused, torch::Tensor& p) {
      p = start.to(dtype).to(torch::kFloat32).to(dtype).requires_grad_(true);  // same bf16 start
      json o = options;
      o["fused"] = fused;
      return Optimizer(kind, {ParamGroup{"g", {p}, std::nullopt, std::nullopt}}, o);
    };
    torch::Tensor fused_p, plain_p, exact_p;
    auto fused = make(torch::kBFloat16, true, fused_p);
    auto plain = make(torch::kBFloat16, false, plain_p);
    auto exact = make(torch::kFloat32, true, exact_p);
    for (int step = 0; step < 5; ++step) {
      auto grad = torch::randn({4096});
      fused_p.mutable_grad() = grad.to(torch::kBFloat16);
      plain_p.mutable_grad() = grad.to(torch::kBFloat16);
      exact_p.mutable_grad() = grad.to(torch::kBFloat16).to(torch::kFloat32);
      fused.step();
      plain.step();
      exact.step();
    }
    auto error = [&](const torch::Tensor& p) { return (p.to(torch::kFloat32) - exact_p).abs().mean().item<double>(); };
    CHECK((fused_p.scalar_type() == torch::kBFloat16));
    CHECK(error(fused_p) <= error(plain_p));
    // Within a few bf16 ulps (2^-8 relative) of LibTorch's bf16 trajectory.
    CHECK(torch::allclose(fused_p.to(torch::kFloat32), plain_p.to(torch::kFloat32), 2e-2, 1e-2));
    auto& state =
        static_cast<torch::optim::AdamParamState&>(*fused.torch_optimizer().state().at(fused_p.unsafeGetTensorImpl()));
    CHECK(state.step() == 5);
    CHECK((state.exp_avg().scalar_type() == torch::kBFloat16));
    CHECK((state.exp_avg_sq().scalar_type() == torch::kBFloat16));
  }
}

TEST_CASE("the fused option is read and checked") {
  auto p = torch::randn({3}).requires_grad_(true);
  CHECK(Optimizer("adamw", {ParamGroup{"g", {p}, std::nullopt, std::nullopt}}, json{{"fused", false}}).fused() ==
        false);
  CHECK(Optimizer("adam", {ParamGroup{"g", {p}, std::nullopt, std::nullopt}}, json::object()).fused());
  CHECK_THROWS_WITH_AS(Optimizer("adamw", {ParamGroup{"g", {p}, std::nullopt, std::nullopt}}, json{{"fused", "yes"}}),
                       doctest::Contains("'fused' must be"), lrhost::util::ConfigError);
  CHECK_THROWS_WITH_AS(Optimizer("sgd", {ParamGroup{"g", {p}, std::nullopt, std::nullopt}}, json{{"fused", true}}),
                       doctest::Contains("unknown option 'fused'"), lrhost::util::ConfigError);
}

// The fp32 CPU update runs four elements at a time (SSE2) and the rest one at a time; both must be
// the same arithmetic bit for bit: a 64-element parameter (all SIMD) against 64 one-element ones
// (all scalar) with the same values and gradients.
TEST_CASE("fused fp32 CPU step: the SIMD and scalar paths agree bit for bit") {
  for (std::string kind : {"adam", "adamw"}) {
    CAPTURE(kind);
    torch::manual_seed(11);
    auto whole = torch::randn({64}).requires_grad_(true);
    std::vector<torch::Tensor> pieces;
    for (int64_t i = 0; i < 64; ++i) pieces.push_back(whole.detach()[i].reshape({1}).clone().requires_grad_(true));
    json options{{"lr", 1e-2}, {"weight_decay", 0.1}, {"eps", 1e-8}};
    Optimizer simd(kind, {ParamGroup{"g", {whole}, std::nullopt, std::nullopt}}, options);
    Optimizer scalar(kind, {ParamGroup{"g", pieces, std::nullopt, std::nullopt}}, options);
    for (int step = 0; step < 3; ++step) {
      auto grad = torch::randn({64});
      whole.mutable_grad() = grad.clone();
      for (int64_t i = 0; i < 64; ++i)
        pieces[static_cast<std::size_t>(i)].mutable_grad() = grad[i].reshape({1}).clone();
      simd.step();
      scalar.step();
    }
    CHECK(torch::equal(whole.detach(), torch::cat(pieces).detach()));
  }
}
