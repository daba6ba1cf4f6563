// The CUDA-graph capture decision, batch signatures, the policies' capture blockers and the
// capturable Adam's refusals: everything about accelerator.cuda_graph that a CPU can check (the
// capture itself is tests/gpu/cuda_graph_step.lua).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "host/accel/cuda_graph_plan.hpp"
#include "host/optim/graph_adam.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

using lrhost::accel::CudaGraphRequest;
using lrhost::accel::decide_cuda_graph;
using lrhost::policy::PolicyFeatures;

namespace {

// A request that captures; each case below breaks one fact.
CudaGraphRequest capturable() {
  CudaGraphRequest r;
  r.requested = true;
  r.cuda = true;
  r.optimizer_kind = lrhost::optim::OptimizerKind::adamw;
  return r;
}

PolicyFeatures features_with_camera() {
  PolicyFeatures f;
  f.inputs.push_back({"observation.state", "STATE", {2}});
  f.inputs.push_back({"observation.images.top", "VISUAL", {3, 96, 96}});
  f.outputs.push_back({"action", "ACTION", {2}});
  return f;
}

}  // namespace

TEST_CASE("cuda graph decision: captures a plain single-GPU Adam step, refuses with a reason otherwise") {
  CHECK(decide_cuda_graph(capturable()).capture);
  CHECK(decide_cuda_graph(capturable()).reason.empty());
  auto off = capturable();
  off.requested = false;
  CHECK_FALSE(decide_cuda_graph(off).capture);
  CHECK(decide_cuda_graph(off).reason.empty());

  struct Case {
    std::function<void(CudaGraphRequest&)> change;
    std::string reason;  // "" means: still captures
  };
  const std::vector<Case> cases{
      {[](auto& r) { r.optimizer_kind = lrhost::optim::OptimizerKind::adam; }, ""},
      {[](auto& r) { r.mixed_precision = lrhost::accel::MixedPrecision::bf16; }, ""},
      {[](auto& r) { r.cuda = false; }, "the device is not a GPU"},
      {[](auto& r) { r.world_size = 4; }, "4 ranks are not captured"},
      {[](auto& r) { r.sharded = true; }, "FSDP"},
      {[](auto& r) { r.gradient_accumulation_steps = 2; }, "gradient accumulation (2 steps)"},
      {[](auto& r) { r.mixed_precision = lrhost::accel::MixedPrecision::fp16; }, "fp16 loss scaling"},
      {[](auto& r) { r.nonfinite = lrhost::accel::NonfinitePolicy::skip; }, "nonfinite = \"skip\""},
      {[](auto& r) { r.optimizer_kind = lrhost::optim::OptimizerKind::sgd; }, "sgd optimizer has no capturable step"},
      {[](auto& r) { r.policy_blocker = "host-side crop"; }, "host-side crop"},
  };
  for (const auto& c : cases) {
    auto request = capturable();
    c.change(request);
    auto decision = decide_cuda_graph(request);
    CAPTURE(c.reason);
    CHECK(decision.capture == c.reason.empty());
    CHECK(decision.reason.find(c.reason) != std::string::npos);
    if (c.reason.empty()) CHECK(decision.reason.empty());
  }
}

TEST_CASE("batch signature: keys, dtypes, devices and shapes; equal only for equal layouts") {
  std::map<std::string, torch::Tensor> a{{"action", torch::zeros({8, 100, 14})},
                                         {"observation.state", torch::zeros({8, 14})}};
  auto signature = lrhost::accel::batch_signature(a);
  CHECK(signature == "action:Float@cpu[8, 100, 14] observation.state:Float@cpu[8, 14]");
  auto b = a;
  b["action"] = torch::ones({8, 100, 14});  // values do not matter
  CHECK(lrhost::accel::batch_signature(b) == signature);
  b["action"] = torch::zeros({7, 100, 14});  // the last, short batch of an epoch
  CHECK(lrhost::accel::batch_signature(b) != signature);
  b = a;
  b["action"] = torch::zeros({8, 100, 14}, torch::kFloat64);
  CHECK(lrhost::accel::batch_signature(b) != signature);
  b = a;
  b["action_is_pad"] = torch::zeros({8, 100}, torch::kBool);
  CHECK(lrhost::accel::batch_signature(b) != signature);
}

TEST_CASE("policies say why their training step cannot be captured") {
  using lrhost::policy::create_policy;
  // LeRobot 0.6.1's default Diffusion does not crop; a random crop is drawn on the host.
  auto plain = create_policy({{"type", "diffusion"}, {"down_dims", {32, 64}}}, features_with_camera());
  CHECK_FALSE(plain->cuda_graph_blocker());
  auto cropped =
      create_policy({{"type", "diffusion"}, {"down_dims", {32, 64}}, {"crop_shape", {84, 84}}}, features_with_camera());
  REQUIRE(cropped->cuda_graph_blocker());
  CHECK(cropped->cuda_graph_blocker()->find("random crop") != std::string::npos);
  auto centered = create_policy(
      {{"type", "diffusion"}, {"down_dims", {32, 64}}, {"crop_shape", {84, 84}}, {"crop_is_random", false}},
      features_with_camera());
  CHECK_FALSE(centered->cuda_graph_blocker());
  auto act = create_policy({{"type", "act"}, {"dim_model", 32}, {"n_heads", 2}, {"dim_feedforward", 64}},
                           features_with_camera());
  CHECK_FALSE(act->cuda_graph_blocker());
  auto mlp = create_policy({{"type", "mlp"}, {"input_dim", 4}, {"output_dim", 2}});
  CHECK_FALSE(mlp->cuda_graph_blocker());
}

TEST_CASE("capturable Adam refuses parameters off the GPU") {
  auto w = torch::randn({3}, torch::requires_grad());
  auto v = torch::randn({2}, torch::requires_grad());
  torch::optim::AdamW adamw({w, v}, torch::optim::AdamWOptions(1e-3));
  // No state yet (no step taken): nothing to capture, nothing refused.
  CHECK_NOTHROW(lrhost::optim::GraphAdam(adamw, true));
  (w.sum() + v.sum()).backward();
  adamw.step();
  CHECK_THROWS_WITH_AS(lrhost::optim::GraphAdam(adamw, true),
                       doctest::Contains("every optimized parameter on the GPU; one is on cpu"),
                       lrhost::util::ConfigError);
}
