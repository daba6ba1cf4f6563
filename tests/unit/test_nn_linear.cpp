// Unit tests of nn::apply_linear (host/nn/linear): equal to at::linear; the oneDNN reordered-weight
// CPU path taken only without autograd, cached per weight, rebuilt when the weight changes, and off
// when switched off.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/nn/linear.hpp"

using namespace lrhost;

namespace {
torch::nn::Linear frozen_linear(torch::nn::LinearOptions options) {
  torch::nn::Linear layer(options);
  for (auto& parameter : layer->parameters()) parameter.set_requires_grad(false);
  return layer;
}

struct PackedLinearSetting {  // restores the process-wide switch after a test
  explicit PackedLinearSetting(bool enabled) : previous(nn::set_cpu_packed_linear(enabled)) {}
  ~PackedLinearSetting() { nn::set_cpu_packed_linear(previous); }
  bool previous;
};
}  // namespace

TEST_CASE("apply_linear equals at::linear with autograd, in bf16 and with the switch off (bit for bit)") {
  torch::manual_seed(0);
  torch::nn::Linear layer(torch::nn::LinearOptions(24, 40));
  const auto x = torch::randn({2, 7, 24});
  CHECK(torch::equal(nn::apply_linear(layer, x), torch::linear(x, layer->weight, layer->bias)));
  CHECK_FALSE(nn::uses_cpu_packed_linear(layer->weight, x));  // grad mode on, weight trainable
  {
    // A frozen layer in a training step (grad mode on, nothing to differentiate) takes the fast path.
    auto frozen = frozen_linear(torch::nn::LinearOptions(24, 40));
    if (nn::uses_cpu_packed_linear(frozen->weight, x)) {
      const auto out = nn::apply_linear(frozen, x);
      CHECK_FALSE(out.requires_grad());
      CHECK(torch::allclose(out, torch::linear(x, frozen->weight, frozen->bias), 1e-5, 1e-6));
    }
    CHECK_FALSE(nn::uses_cpu_packed_linear(frozen->weight, x.clone().set_requires_grad(true)));
    // A trainable bias on a frozen weight still needs the graph: at::linear, bit for bit.
    frozen->bias.set_requires_grad(true);
    CHECK(torch::equal(nn::apply_linear(frozen, x), torch::linear(x, frozen->weight, frozen->bias)));
    CHECK(nn::apply_linear(frozen, x).requires_grad());
  }
  torch::NoGradGuard no_grad;
  {
    PackedLinearSetting off(false);
    CHECK_FALSE(nn::uses_cpu_packed_linear(layer->weight, x));
    CHECK(torch::equal(nn::apply_linear(layer, x), torch::linear(x, layer->weight, layer->bias)));
  }
  layer->to(torch::kBFloat16);
  const auto xb = x.to(torch::kBFloat16);
  CHECK_FALSE(nn::uses_cpu_packed_linear(layer->weight, xb));
  CHECK(torch::equal(nn::apply_linear(layer, xb), torch::linear(xb, layer->weight, layer->bias)));
}

TEST_CASE("without autograd, fp32 CPU Linears use a cached reordered weight that follows weight changes") {
  PackedLinearSetting on(true);
  torch::manual_seed(1);
  auto layer = frozen_linear(torch::nn::LinearOptions(64, 96));
  auto no_bias = frozen_linear(torch::nn::LinearOptions(64, 32).bias(false));
  const auto x = torch::randn({3, 5, 64});
  torch::NoGradGuard no_grad;
  // A trainable weight never takes it, even without autograd: its values can change under FSDP's
  // set_data re-gathers without its version counter moving, which a cached copy would not notice.
  CHECK_FALSE(nn::uses_cpu_packed_linear(torch::nn::Linear(64, 96)->weight, x));
  if (!nn::uses_cpu_packed_linear(layer->weight, x)) {
    MESSAGE("this LibTorch has no oneDNN linear operators; the packed path is not exercised");
    return;
  }
  auto out = nn::apply_linear(layer, x);
  CHECK(torch::allclose(out, torch::linear(x, layer->weight, layer->bias), 1e-5, 1e-6));
  const auto cached = nn::cpu_packed_linear_cache_size();  // inserting also drops freed weights' copies
  CHECK(cached >= 1);
  nn::apply_linear(layer, x);
  CHECK(nn::cpu_packed_linear_cache_size() == cached);  // reused, not packed again
  {
    auto temporary = frozen_linear(torch::nn::LinearOptions(64, 8));
    nn::apply_linear(temporary, x);
    CHECK(nn::cpu_packed_linear_cache_size() == cached + 1);
  }
  // The temporary layer is gone: the next insertion drops its copy.
  CHECK(torch::allclose(nn::apply_linear(no_bias, x), torch::linear(x, no_bias->weight), 1e-5, 1e-6));
  CHECK(nn::cpu_packed_linear_cache_size() == cached + 1);
  // An in-place change (an optimizer step, a weight load) bumps the version: the copy is rebuilt.
  layer->weight.mul_(-2);
  CHECK(torch::allclose(nn::apply_linear(layer, x), torch::linear(x, layer->weight, layer->bias), 1e-5, 1e-6));
  CHECK_FALSE(torch::allclose(nn::apply_linear(layer, x), out, 1e-3, 1e-3));
  // set_data onto other storage (as FSDP swaps a parameter's data) is noticed too.
  layer->weight.set_data(torch::randn({96, 64}));
  CHECK(torch::allclose(nn::apply_linear(layer, x), torch::linear(x, layer->weight, layer->bias), 1e-5, 1e-6));
  // 2-D input too.
  const auto flat = x.reshape({15, 64});
  CHECK(torch::allclose(nn::apply_linear(layer, flat), torch::linear(flat, layer->weight, layer->bias), 1e-5, 1e-6));
}
