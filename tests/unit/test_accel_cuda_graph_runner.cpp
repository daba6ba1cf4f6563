// CudaGraphRunner's sequencing (warm-up, capture, replay, eager steps for other batch shapes, the
// fall-back when capture fails, the status it reports), driven with a stand-in for the CUDA step:
// the parts of accelerator.cuda_graph a CPU can run (the capture itself is
// tests/gpu/cuda_graph_step.lua).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/accel/cuda_graph_runner.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

using lrhost::accel::CapturedStep;
using lrhost::accel::CudaGraphDecision;
using lrhost::accel::CudaGraphRunner;
using lrhost::accel::StepOutputs;

namespace {

// Records what the runner asks of it; capture fails with `capture_error` when it is set.
struct StandInCapturedStep final : CapturedStep {
  const lrhost::policy::Policy* policy = nullptr;
  const lrhost::optim::Optimizer* optimizer = nullptr;
  double max_norm = 0;
  std::string capture_error;
  std::vector<std::string>* calls = nullptr;
  bool is_captured = false;
  std::string captured_signature;

  void run_eager(const std::function<void()>& step) override {
    calls->push_back("eager on the graph's stream");
    step();
  }
  bool built_for(const lrhost::policy::Policy& p, const lrhost::optim::Optimizer& o, double n) const override {
    return &p == policy && &o == optimizer && n == max_norm;
  }
  void capture(const lrhost::policy::Batch& batch) override {
    calls->push_back("capture");
    if (!capture_error.empty()) throw std::runtime_error(capture_error);
    is_captured = true;
    captured_signature = lrhost::accel::batch_signature(batch);
  }
  bool captured() const override { return is_captured; }
  const std::string& signature() const override { return captured_signature; }
  int64_t updated_parameters() const override { return 1; }
  StepOutputs replay(const lrhost::policy::Batch&) override {
    calls->push_back("replay");
    return StepOutputs{torch::tensor(1.5f), {}, {}};
  }
};

struct RunnerFixture {
  std::shared_ptr<lrhost::policy::Policy> policy =
      lrhost::policy::create_policy({{"type", "mlp"}, {"input_dim", 4}, {"output_dim", 2}});
  torch::Tensor weight = torch::zeros({2}, torch::requires_grad());
  lrhost::optim::Optimizer optimizer{"adamw", {lrhost::optim::ParamGroup{"g", {weight}, {}, {}}}, {{"lr", 0.1}}};
  std::vector<std::string> calls;

  std::unique_ptr<StandInCapturedStep> step(std::string capture_error = "") {
    auto s = std::make_unique<StandInCapturedStep>();
    s->policy = policy.get();
    s->optimizer = &optimizer;
    s->max_norm = 1.0;
    s->capture_error = std::move(capture_error);
    s->calls = &calls;
    return s;
  }
  // One runner step; "eager" is logged when the runner ran the ordinary step.
  std::optional<StepOutputs> run(CudaGraphRunner& runner, const lrhost::policy::Batch& batch) {
    return runner.run(*policy, optimizer, 1.0, batch, [&] { calls.push_back("eager"); });
  }
};

lrhost::policy::Batch state_batch(int64_t size) {
  return {{"observation.state", torch::zeros({size, 4})}};
}

}  // namespace

TEST_CASE("cuda graph runner: warm-up steps run eagerly on the graph's stream, then it captures and replays") {
  RunnerFixture f;
  CudaGraphRunner runner(true, CudaGraphDecision{true, ""}, f.step(), false);
  CHECK(runner.active());
  CHECK(runner.status() == "warming up");
  for (int64_t i = 0; i < CudaGraphRunner::kWarmupSteps; ++i) CHECK_FALSE(f.run(runner, state_batch(8)));
  CHECK(f.calls.size() == 2 * CudaGraphRunner::kWarmupSteps);
  for (size_t i = 0; i < f.calls.size(); i += 2) {
    CHECK(f.calls[i] == "eager on the graph's stream");
    CHECK(f.calls[i + 1] == "eager");
  }
  f.calls.clear();
  auto captured = f.run(runner, state_batch(8));  // the capture step replays what it captured
  REQUIRE(captured);
  CHECK(captured->loss.item<float>() == 1.5f);
  CHECK(f.calls == std::vector<std::string>{"capture", "replay"});
  CHECK(runner.status() == "captured");
  f.calls.clear();
  CHECK(f.run(runner, state_batch(8)));
  CHECK(f.calls == std::vector<std::string>{"replay"});
}

TEST_CASE("cuda graph runner: a batch of another shape runs eagerly and the graph stays for the next") {
  RunnerFixture f;
  CudaGraphRunner runner(true, CudaGraphDecision{true, ""}, f.step(), false);
  for (int64_t i = 0; i <= CudaGraphRunner::kWarmupSteps; ++i) f.run(runner, state_batch(8));
  f.calls.clear();
  CHECK_FALSE(f.run(runner, state_batch(7)));  // an epoch's short last batch
  CHECK(f.calls == std::vector<std::string>{"eager on the graph's stream", "eager"});
  f.calls.clear();
  CHECK(f.run(runner, state_batch(8)));
  CHECK(f.calls == std::vector<std::string>{"replay"});
  CHECK(runner.status() == "captured");
}

TEST_CASE("cuda graph runner: a failed capture runs that step eagerly and every later one, and says why") {
  RunnerFixture f;
  CudaGraphRunner runner(true, CudaGraphDecision{true, ""}, f.step("operation not permitted when stream is capturing"),
                         false);
  for (int64_t i = 0; i < CudaGraphRunner::kWarmupSteps; ++i) f.run(runner, state_batch(8));
  f.calls.clear();
  CHECK_FALSE(f.run(runner, state_batch(8)));
  CHECK(f.calls == std::vector<std::string>{"capture", "eager"});
  CHECK_FALSE(runner.active());
  CHECK(runner.status() == "eager: capture failed: operation not permitted when stream is capturing");
}

TEST_CASE("cuda graph runner: refuses another policy, optimizer or clip norm than the step was built for") {
  RunnerFixture f;
  CudaGraphRunner runner(true, CudaGraphDecision{true, ""}, f.step(), false);
  CHECK_THROWS_WITH_AS(runner.run(*f.policy, f.optimizer, 0.5, state_batch(8), [] {}),
                       doctest::Contains("every call must pass the policy, optimizer and max_norm of the first"),
                       lrhost::util::ConfigError);
  auto other = lrhost::policy::create_policy({{"type", "mlp"}, {"input_dim", 4}, {"output_dim", 2}});
  CHECK_THROWS_AS(runner.run(*other, f.optimizer, 1.0, state_batch(8), [] {}), lrhost::util::ConfigError);
  CHECK(f.calls.empty());
}

TEST_CASE("cuda graph runner: status of a refused or unrequested graph; a step only when capturing") {
  RunnerFixture f;
  CudaGraphRunner refused(true, CudaGraphDecision{false, "FSDP shards are not captured"}, nullptr, false);
  CHECK_FALSE(refused.active());
  CHECK(refused.status() == "eager: FSDP shards are not captured");
  CudaGraphRunner off(false, CudaGraphDecision{false, ""}, nullptr, false);
  CHECK(off.status() == "off");
  CHECK_THROWS_AS(CudaGraphRunner(true, CudaGraphDecision{false, "no"}, f.step(), false), std::logic_error);
  CHECK_THROWS_AS(CudaGraphRunner(true, CudaGraphDecision{true, ""}, nullptr, false), std::logic_error);
}
