// Training FLOPs per sample (host/policy/training_flops.hpp, Policy::training_flops_per_sample) against
// an independent count: LibTorch's profiler (with_flops and input shapes) over one real forward +
// backward of the tiny pi0/pi05 (and the mlp), in every freezing mode and with activation
// checkpointing, summed over the matmul and convolution ops that actually ran. The profiler has no
// record of convolution_backward's FLOPs, so the patch embedding's weight gradient (when the vision
// tower trains) is added to its side. The issue asks for 5 %; the two counts agree to 0.02 % (the one
// gap, 3·10³ of 2.6·10⁷ FLOPs, in train_expert_only with checkpointing), so the check is 0.5 %.
#include <doctest/doctest.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <set>

#include "host/policy/pi0/pi0_policy.hpp"
#include "host/policy/pi05/pi05_policy.hpp"
#include "host/policy/registry.hpp"
#include "test_support.hpp"

using lrhost::policy::Batch;
using nlohmann::json;

namespace {

double numel(const std::vector<int64_t>& shape) {
  double n = 1;
  for (auto d : shape) n *= static_cast<double>(d);
  return n;
}

// The matmul and convolution FLOPs of what `body` runs, op by op as the profiler recorded them: its
// own count for aten::mm/addmm/bmm/baddbmm/conv2d (aten::matmul and aten::linear dispatch to these,
// so nothing is counted twice), and, from the recorded input shapes, the ops it leaves at 0: oneDNN's
// fused linear (LibTorch's CPU path for a frozen layer on an input without gradient) and SDPA's
// attention (SigLIP), forward 4·B·H·L·S·E and backward twice that, as MFU counts attention.
double profiled_matmul_flops(const std::function<void()>& body) {
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO,
                                               /*report_input_shapes=*/true, /*profile_memory=*/false,
                                               /*with_stack=*/false, /*with_flops=*/true);
  const std::set<ActivityType> activities{ActivityType::CPU};
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  body();
  auto result = profiler::disableProfiler();
  REQUIRE(result);
  static const std::set<std::string> counted{"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::conv2d"};
  double flops = 0;
  for (const auto& event : result->events()) {
    const auto& shapes = event.shapes();
    auto attention = [&](std::size_t q, std::size_t k) {  // q (B, H, L, E), k (B, H, S, E)
      return 4 * numel(shapes[q]) * static_cast<double>(shapes[k][2]);
    };
    if (counted.count(event.name()))
      flops += static_cast<double>(event.flops());
    else if (event.name() == "mkldnn::_linear_pointwise")  // input (..., K), weight (N, K)
      flops += 2 * numel(shapes[0]) * static_cast<double>(shapes[1][0]);
    else if (event.name() == "aten::_scaled_dot_product_flash_attention_for_cpu")
      flops += attention(0, 1);
    else if (event.name() == "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
      flops += 2 * attention(1, 2);  // grad_out, q, k, v, ...
  }
  return flops;
}

json tiny_pi(const std::string& type, const std::string& mode, bool checkpointing) {
  auto table = lrhost::test::tiny_pi_table(type);
  table["freeze_vision_encoder"] = mode == "vision";
  table["train_expert_only"] = mode == "expert";
  table["gradient_checkpointing"] = checkpointing;
  return table;
}

Batch tiny_pi_batch(int64_t size) {
  return {{"observation.state", torch::randn({size, 3})},
          {"observation.images.top", torch::rand({size, 3, 32, 32})},
          {"action", torch::randn({size, 4, 2})},
          {"observation.language.tokens", torch::randint(1, 1000, {size, 12}, torch::kLong)},
          {"observation.language.attention_mask", torch::ones({size, 12}, torch::kBool)}};
}

double train_step_flops(lrhost::policy::Policy& policy, const Batch& batch) {
  policy.train();
  return profiled_matmul_flops([&] { policy.run(batch).loss.backward(); });
}

}  // namespace

TEST_CASE("training flops: pi0/pi05's count is the profiler's, frozen or not, checkpointed or not") {
  constexpr int64_t kBatch = 2;
  for (const std::string type : {"pi0", "pi05"})
    for (const std::string mode : {"none", "vision", "expert"})
      for (const bool checkpointing : {false, true}) {
        CAPTURE(type);
        CAPTURE(mode);
        CAPTURE(checkpointing);
        const auto table = tiny_pi(type, mode, checkpointing);
        auto policy = lrhost::policy::create_policy(table);
        const auto counted = policy->training_flops_per_sample();
        REQUIRE(counted);
        // The patch embedding's weight gradient, which the profiler does not count: 2 cameras (one
        // empty), 16 patches of 3·8·8 inputs into 32 channels, when the vision tower trains.
        const double conv_backward = mode == "none" ? 2.0 * 2 * 16 * (3 * 8 * 8) * 32 : 0.0;
        const double profiled = train_step_flops(*policy, tiny_pi_batch(kBatch)) / kBatch + conv_backward;
        CHECK(*counted == doctest::Approx(profiled).epsilon(0.005));
      }
}

TEST_CASE("training flops: the mlp's count is the profiler's; a policy without a count says so") {
  auto mlp = lrhost::test::small_mlp();  // 5 -> 7 -> 4 -> 3
  const auto counted = mlp->training_flops_per_sample();
  REQUIRE(counted);
  mlp->train();
  Batch batch{{"observation.state", torch::randn({4, 5})}, {"action", torch::randn({4, 3})}};
  const double profiled = profiled_matmul_flops([&] { mlp->run(batch).loss.backward(); }) / 4;
  CHECK(*counted == doctest::Approx(profiled).epsilon(0.005));
  CHECK(*counted == doctest::Approx(2.0 * (5 * 7 + 7 * 4 + 4 * 3) * 3 - 2.0 * 5 * 7));
}
