// Unit tests of nn::checkpoint (host/nn/activation_checkpoint): outputs, every gradient and the random
// stream after backward are bit-identical with and without checkpointing — for a small MLP with
// dropout (the mask is drawn again in backward from the restored generator), two segments in a row,
// several inputs and outputs, an input that needs no gradient, captured parameters reached only
// through the parameter list, bf16 autocast on CPU — and under no_grad the function just runs.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <optional>
#include <vector>

#include "host/nn/activation_checkpoint.hpp"
#include "host/nn/autocast.hpp"
#include "host/nn/dropout.hpp"

using namespace lrhost;

namespace {

struct CkptTestMlp {
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  CkptTestMlp() {
    torch::manual_seed(7);
    fc1 = torch::nn::Linear(8, 32);
    fc2 = torch::nn::Linear(32, 8);
  }
  std::vector<torch::Tensor> parameters() const { return nn::trainable_parameters({fc1.ptr().get(), fc2.ptr().get()}); }
};

// Two inputs (x may need a gradient, scale never does), two outputs; dropout draws from the default
// CPU generator. Captures the module holders by value, as a checkpointed function must.
nn::CheckpointedFunction ckpt_test_block(const CkptTestMlp& mlp) {
  auto fc1 = mlp.fc1;
  auto fc2 = mlp.fc2;
  return [fc1, fc2](const std::vector<torch::Tensor>& in) mutable -> std::vector<torch::Tensor> {
    auto h = torch::gelu(fc1->forward(in[0]));
    h = nn::dropout(h, 0.3, /*train=*/true) * in[1];
    auto out = fc2->forward(h);
    out = out + in[0].to(out.scalar_type());
    return {out, h.sum(-1)};
  };
}

struct CkptTestOutcome {
  std::vector<torch::Tensor> values;  // outputs, then the gradients of x and of every parameter
  torch::Tensor next_draw;            // the generator's next draw after backward
};

// Two blocks in a row (two segments when checkpointed), a loss over both outputs, backward.
CkptTestOutcome ckpt_test_run(bool checkpointed, bool x_requires_grad, bool autocast = false) {
  CkptTestMlp first, second;
  torch::manual_seed(11);
  auto x = torch::randn({4, 8}).requires_grad_(x_requires_grad);
  auto scale = torch::rand({4, 32});
  auto block = [&](const CkptTestMlp& mlp, const torch::Tensor& input) {
    auto fn = ckpt_test_block(mlp);
    return checkpointed ? nn::checkpoint(fn, {input, scale}, mlp.parameters()) : fn({input, scale});
  };
  torch::manual_seed(3);
  torch::Tensor loss;
  std::vector<torch::Tensor> outputs;
  {
    std::optional<nn::AutocastSpec> spec;
    if (autocast) spec = nn::AutocastSpec{c10::DeviceType::CPU, c10::kBFloat16};
    nn::AutocastGuard guard(spec);
    auto a = block(first, x);
    auto b = block(second, a[0]);
    outputs = {a[0], a[1], b[0], b[1]};
    loss = b[0].to(torch::kFloat).square().sum() + a[1].to(torch::kFloat).sum() + b[1].to(torch::kFloat).mean();
  }
  loss.backward();
  CkptTestOutcome outcome;
  for (auto& o : outputs) outcome.values.push_back(o.detach());
  outcome.values.push_back(loss.detach());
  if (x_requires_grad) outcome.values.push_back(x.grad());
  for (const auto* mlp : {&first, &second})
    for (auto& p : mlp->parameters()) {
      REQUIRE(p.grad().defined());
      outcome.values.push_back(p.grad());
    }
  outcome.next_draw = torch::rand({1});
  return outcome;
}

void ckpt_test_check_identical(const CkptTestOutcome& a, const CkptTestOutcome& b) {
  REQUIRE(a.values.size() == b.values.size());
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    INFO("value " << i);
    CHECK((a.values[i].scalar_type() == b.values[i].scalar_type()));
    CHECK(torch::equal(a.values[i], b.values[i]));
  }
  CHECK(torch::equal(a.next_draw, b.next_draw));
}

}  // namespace

TEST_CASE("checkpoint: outputs, gradients and the random stream bit-identical, dropout mask redrawn") {
  auto plain = ckpt_test_run(false, true);
  auto checkpointed = ckpt_test_run(true, true);
  ckpt_test_check_identical(plain, checkpointed);
}

TEST_CASE("checkpoint: an input without gradient; parameters reached through the parameter list only") {
  // No input requires grad: the parameters alone make the node part of the graph.
  auto plain = ckpt_test_run(false, false);
  auto checkpointed = ckpt_test_run(true, false);
  ckpt_test_check_identical(plain, checkpointed);
}

TEST_CASE("checkpoint: bf16 autocast on CPU, recomputed under the same autocast state") {
  auto plain = ckpt_test_run(false, true, /*autocast=*/true);
  auto checkpointed = ckpt_test_run(true, true, /*autocast=*/true);
  CHECK((plain.values[0].scalar_type() == torch::kBFloat16));  // autocast did run the linears in bf16
  ckpt_test_check_identical(plain, checkpointed);
}

TEST_CASE("checkpoint: keeps the inputs, not the activations") {
  CkptTestMlp mlp;
  auto x = torch::randn({4, 8}).requires_grad_(true);
  auto scale = torch::rand({4, 32});
  auto out = nn::checkpoint(ckpt_test_block(mlp), {x, scale}, mlp.parameters());
  // One node for the whole segment, whose only saved tensors are the two inputs.
  REQUIRE(out[0].grad_fn());
  CHECK(out[0].grad_fn() == out[1].grad_fn());
  CHECK(out[0].grad_fn()->next_edges().size() == 2 + mlp.parameters().size());
}

TEST_CASE("checkpoint: under no_grad the function just runs") {
  CkptTestMlp mlp;
  auto x = torch::randn({4, 8}).requires_grad_(true);
  auto scale = torch::rand({4, 32});
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  auto plain = ckpt_test_block(mlp)({x, scale});
  torch::manual_seed(5);
  auto checkpointed = nn::checkpoint(ckpt_test_block(mlp), {x, scale}, mlp.parameters());
  CHECK(!checkpointed[0].requires_grad());
  CHECK(torch::equal(plain[0], checkpointed[0]));
  CHECK(torch::equal(plain[1], checkpointed[1]));
}

TEST_CASE("checkpoint: undefined inputs and outputs keep their positions") {
  CkptTestMlp mlp;
  auto fc1 = mlp.fc1;
  auto x = torch::randn({2, 8}).requires_grad_(true);
  auto fn = [fc1](const std::vector<torch::Tensor>& in) mutable -> std::vector<torch::Tensor> {
    CHECK(!in[0].defined());
    return {torch::Tensor(), fc1->forward(in[1])};
  };
  auto out = nn::checkpoint(fn, {torch::Tensor(), x}, nn::trainable_parameters({fc1.ptr().get()}));
  REQUIRE(out.size() == 2);
  CHECK(!out[0].defined());
  out[1].sum().backward();
  CHECK(x.grad().defined());
  const auto bias_grad = fc1->bias.grad().clone();
  auto x_plain = x.detach().clone().requires_grad_(true);
  fc1->zero_grad();
  fc1->forward(x_plain).sum().backward();
  CHECK(torch::equal(x.grad(), x_plain.grad()));
  CHECK(torch::equal(bias_grad, fc1->bias.grad()));
}
