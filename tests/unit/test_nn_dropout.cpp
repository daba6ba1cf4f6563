// Unit tests of nn::dropout (host/nn/dropout): bit for bit at::dropout — output, gradient and the
// default generator's state afterwards — for masks that start mid-block, span several MT19937 blocks
// and end inside one; the fallbacks (other dtypes, non-contiguous inputs, p = 0 / 1, eval, the switch).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include "host/nn/dropout.hpp"

using namespace lrhost;

namespace {

struct BulkDropoutSetting {  // restores the process-wide switch after a test
  explicit BulkDropoutSetting(bool enabled) : previous(nn::set_bulk_dropout(enabled)) {}
  ~BulkDropoutSetting() { nn::set_bulk_dropout(previous); }
  bool previous;
};

struct Outcome {
  torch::Tensor output, grad;
  uint64_t next_draw;  // the generator's next 64-bit output: equal only if both consumed as much
};

// Seeds the default generator, consumes `skip` words (so the mask starts mid-block), runs `dropout`
// on a fresh input with a backward pass, and reads the generator's next draw.
template <typename Dropout>
Outcome run(Dropout&& dropout, const torch::Tensor& input, double p, int64_t skip) {
  torch::manual_seed(1234);
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    for (int64_t i = 0; i < skip; ++i) generator.get<at::CPUGeneratorImpl>()->random();
  }
  auto x = input.clone().set_requires_grad(true);
  auto output = dropout(x, p, true);
  (output * torch::arange(output.numel(), torch::kFloat32).reshape(output.sizes())).sum().backward();
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return {output.detach(), x.grad(), generator.get<at::CPUGeneratorImpl>()->random64()};
}

void check_same(const Outcome& ours, const Outcome& aten) {
  CHECK(torch::equal(ours.output, aten.output));
  CHECK(torch::equal(ours.grad, aten.grad));
  CHECK(ours.next_draw == aten.next_draw);
}

}  // namespace

TEST_CASE("nn::dropout equals at::dropout bit for bit: output, gradient and generator state") {
  BulkDropoutSetting on(true);
  const auto probe = torch::ones({4});
  if (!nn::draws_dropout_mask_in_bulk(probe, 0.1, true)) {
    MESSAGE("this CPU takes ATen's MKL Bernoulli path (Intel with MKL): nn::dropout calls at::dropout there");
  }
  torch::manual_seed(0);
  // 1 and 311 elements stay inside the first block; 5000 and 100003 cross several (two words each);
  // the attention-shaped one is what ACT drops.
  const std::vector<std::vector<int64_t>> shapes = {{1}, {311}, {5000}, {100003}, {2, 8, 37, 41}};
  for (const auto& shape : shapes) {
    const auto input = torch::randn(shape);
    for (const double p : {0.1, 0.5, 0.97}) {
      for (const int64_t skip : {0, 1, 623, 700}) {
        CAPTURE(input.numel());
        CAPTURE(p);
        CAPTURE(skip);
        CHECK(nn::draws_dropout_mask_in_bulk(input, p, true) == nn::draws_dropout_mask_in_bulk(probe, 0.1, true));
        check_same(run(nn::dropout, input, p, skip),
                   run([](const torch::Tensor& x, double q, bool t) { return at::dropout(x, q, t); }, input, p, skip));
      }
    }
  }
}

TEST_CASE("nn::dropout drops about p of the elements and scales the rest by 1 / (1 - p)") {
  torch::manual_seed(3);
  const auto input = torch::ones({200000});
  const auto out = nn::dropout(input, 0.25, true);
  const double kept = out.ne(0).to(torch::kFloat64).mean().item<double>();
  CHECK(kept == doctest::Approx(0.75).epsilon(0.01));
  CHECK(out.max().item<float>() == 1.0f / 0.75f);
}

TEST_CASE("nn::dropout falls back to at::dropout where it would not draw the same stream") {
  BulkDropoutSetting on(true);
  const auto x = torch::randn({64, 32});
  CHECK_FALSE(nn::draws_dropout_mask_in_bulk(x.t(), 0.1, true));                  // not contiguous
  CHECK_FALSE(nn::draws_dropout_mask_in_bulk(x.to(torch::kFloat64), 0.1, true));  // another dtype
  CHECK_FALSE(nn::draws_dropout_mask_in_bulk(x.to(torch::kBFloat16), 0.1, true));
  CHECK_FALSE(nn::draws_dropout_mask_in_bulk(x, 0.0, true));
  CHECK_FALSE(nn::draws_dropout_mask_in_bulk(x, 1.0, true));
  CHECK_FALSE(nn::draws_dropout_mask_in_bulk(x, 0.1, false));  // eval
  CHECK_FALSE(nn::draws_dropout_mask_in_bulk(torch::empty({0}), 0.1, true));
  auto aten = [](const torch::Tensor& t, double q, bool train) { return at::dropout(t, q, train); };
  check_same(run(nn::dropout, x.t(), 0.2, 5), run(aten, x.t(), 0.2, 5));
  check_same(run(nn::dropout, x.to(torch::kFloat64), 0.2, 5), run(aten, x.to(torch::kFloat64), 0.2, 5));
  check_same(run(nn::dropout, x, 1.0, 5), run(aten, x, 1.0, 5));
  CHECK(torch::equal(nn::dropout(x, 0.3, false), x));
  CHECK(torch::equal(nn::dropout(x, 0.0, true), x));
  {
    BulkDropoutSetting off(false);
    CHECK_FALSE(nn::draws_dropout_mask_in_bulk(x, 0.1, true));
    check_same(run(nn::dropout, x, 0.2, 5), run(aten, x, 0.2, 5));
  }
  // An invalid probability is at::dropout's error.
  CHECK_THROWS_WITH(nn::dropout(x, 1.5, true), doctest::Contains("dropout probability has to be between 0 and 1"));
  CHECK_THROWS_WITH(nn::dropout(x, -0.1, true), doctest::Contains("dropout probability has to be between 0 and 1"));
}
