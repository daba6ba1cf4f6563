// Training FLOPs per sample (host/policy/training_flops.hpp, Policy::training_flops_per_sample) against
// an independent count: LibTorch's profiler (with_flops and input shapes) over one real forward +
// backward of the tiny pi0/pi05 (in every freezing mode and with activation checkpointing), SmolVLA
// (its freezing options, cross- and self-attention, fewer expert layers, checkpointing), ACT (with and
// without its VAE, cameras of sizes ResNet-18 does not divide evenly, state and env state), Diffusion
// (crop, resize, shared or per-camera encoders, two and three U-Net levels) and the mlp, summed over
// the matmul and convolution ops that actually ran. The issue asks for 5 %; the counts of ACT,
// Diffusion, SmolVLA and the mlp equal the profiler's, pi0/pi05's agree to 0.012 % (a gap of
// 1.6·10³–3.1·10³ of 1.8·10⁷–3.6·10⁷ FLOPs), so the check is 0.5 %.
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
// attention (SigLIP), forward 4·B·H·L·S·E and backward twice that, as MFU counts attention; and
// convolution_backward, which the profiler leaves at 0, from its recorded shapes (grad_output, input,
// weight): the weight's gradient (every convolution these policies run backward through trains) and
// the input's unless the input comes from the batch (its channel count is in `batch_channels`: the
// pixels' 3, Diffusion's action width; no other convolution in these models reads as many), each
// 2·|grad_output|·C_in·taps, or 2·|input|·C_out·taps for a transposed (upsampling) one. The profiler
// counts no 1-D convolution's forward either: for those the same product is added once more.
double profiled_matmul_flops(const std::function<void()>& body, const std::set<int64_t>& batch_channels = {3}) {
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
    else if (event.name() == "aten::convolution_backward") {
      const auto &grad_output = shapes[0], &input = shapes[1], &weight = shapes[2];
      double taps = 1;  // weight (C_out, C_in, k...) or, transposed, (C_in, C_out, k...)
      for (std::size_t d = 2; d < weight.size(); ++d) taps *= static_cast<double>(weight[d]);
      const bool transposed = grad_output.back() > input.back();
      const double one = transposed ? 2 * numel(input) * static_cast<double>(weight[1]) * taps
                                    : 2 * numel(grad_output) * static_cast<double>(weight[1]) * taps;
      const bool input_grad = !batch_channels.count(transposed ? weight[0] : weight[1]);
      flops += input_grad ? 2 * one : one;
      if (weight.size() == 3) flops += one;
    }
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

double train_step_flops(lrhost::policy::Policy& policy, const Batch& batch,
                        const std::set<int64_t>& batch_channels = {3}) {
  policy.train();
  return profiled_matmul_flops([&] { policy.run(batch).loss.backward(); }, batch_channels);
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
        const double profiled = train_step_flops(*policy, tiny_pi_batch(kBatch)) / kBatch;
        CHECK(*counted == doctest::Approx(profiled).epsilon(0.005));
      }
}

TEST_CASE("training flops: ACT's count is the profiler's, with and without the VAE, cameras or state") {
  constexpr int64_t kBatch = 2;
  struct Case {
    const char* what;
    bool use_vae;
    int cameras;
    bool state, env_state;
  };
  for (const Case& c :
       {Case{"vae, 2 cameras, state", true, 2, true, false}, Case{"no vae, 1 camera", false, 1, true, false},
        Case{"vae, env state only", true, 0, false, true}}) {
    const std::string what = c.what;
    CAPTURE(what);
    lrhost::policy::PolicyFeatures features;
    for (int i = 0; i < c.cameras; ++i)  // 50 x 70: every stride rounds
      features.inputs.push_back({"observation.images.cam" + std::to_string(i), "VISUAL", {3, 50, 70}});
    if (c.state) features.inputs.push_back({"observation.state", "STATE", {6}});
    if (c.env_state) features.inputs.push_back({"observation.environment_state", "ENV", {5}});
    features.outputs.push_back({"action", "ACTION", {4}});
    json table{{"type", "act"},         {"dim_model", 32},           {"n_heads", 4},         {"dim_feedforward", 48},
               {"latent_dim", 8},       {"chunk_size", 5},           {"n_action_steps", 5},  {"n_encoder_layers", 2},
               {"n_decoder_layers", 2}, {"n_vae_encoder_layers", 1}, {"use_vae", c.use_vae}, {"dropout", 0.0}};
    auto policy = lrhost::policy::create_policy(table, features);
    const auto counted = policy->training_flops_per_sample();
    REQUIRE(counted);
    Batch batch{{"action", torch::randn({kBatch, 5, 4})}, {"action_is_pad", torch::zeros({kBatch, 5}, torch::kBool)}};
    for (const auto& feature : features.inputs) {
      std::vector<int64_t> shape{kBatch};
      shape.insert(shape.end(), feature.shape.begin(), feature.shape.end());
      batch[feature.key] = feature.type == "VISUAL" ? torch::rand(shape) : torch::randn(shape);
    }
    const double profiled = train_step_flops(*policy, batch) / kBatch;
    CHECK(*counted == doctest::Approx(profiled).epsilon(0.005));
  }
}

TEST_CASE("training flops: SmolVLA's count is the profiler's, frozen or not, cross or self attention, checkpointed") {
  constexpr int64_t kBatch = 2;
  const auto vlm = lrhost::test::fixture_path("../../recipes/assets", "smolvla_tiny_vlm");
  REQUIRE_FALSE(vlm.empty());
  const json base{{"type", "smolvla"},
                  {"vlm_model_name", vlm.string()},
                  {"input_features",
                   {{"observation.state", {{"type", "STATE"}, {"shape", {6}}}},
                    {"observation.images.top", {{"type", "VISUAL"}, {"shape", {3, 48, 64}}}},
                    {"observation.images.wrist", {{"type", "VISUAL"}, {"shape", {3, 48, 64}}}}}},
                  {"output_features", {{"action", {{"type", "ACTION"}, {"shape", {6}}}}}},
                  {"chunk_size", 5},
                  {"n_action_steps", 5},
                  {"num_vlm_layers", 4},
                  {"resize_imgs_with_padding", {64, 64}},
                  {"tokenizer_max_length", 7},
                  {"pad_language_to", "max_length"}};
  const std::vector<std::pair<const char*, json>> cases{
      {"defaults (expert only, frozen vision)", json::object()},
      {"everything trains", {{"train_expert_only", false}, {"freeze_vision_encoder", false}}},
      {"VLM trains, vision frozen, checkpointed", {{"train_expert_only", false}, {"gradient_checkpointing", true}}},
      {"self-attention only, no state projection", {{"attention_mode", "self_attn"}, {"train_state_proj", false}}},
      {"half as many expert layers (self-attention)",
       {{"num_expert_layers", 2}, {"attention_mode", "self_attn"}, {"train_expert_only", false}}},
      {"checkpointed, vision trains",
       {{"gradient_checkpointing", true}, {"train_expert_only", false}, {"freeze_vision_encoder", false}}}};
  for (const auto& [name, changes] : cases) {
    const std::string what = name;
    CAPTURE(what);
    json table = base;
    table.update(changes);
    auto policy = lrhost::policy::create_policy(table);
    const auto counted = policy->training_flops_per_sample();
    REQUIRE(counted);
    torch::manual_seed(5);
    Batch batch{{"observation.state", torch::randn({kBatch, 6})},
                {"observation.images.top", torch::rand({kBatch, 3, 48, 64})},
                {"observation.images.wrist", torch::rand({kBatch, 3, 48, 64})},
                {"observation.language.tokens", torch::randint(1, 600, {kBatch, 7}, torch::kLong)},
                {"observation.language.attention_mask", torch::ones({kBatch, 7}, torch::kBool)},
                {"action", torch::randn({kBatch, 5, 6})},
                {"action_is_pad", torch::zeros({kBatch, 5}, torch::kBool)}};
    const double profiled = train_step_flops(*policy, batch) / kBatch;
    CHECK(*counted == doctest::Approx(profiled).epsilon(0.005));
  }
}

TEST_CASE("training flops: Diffusion's count is the profiler's, cropped, resized, shared or separate encoders") {
  constexpr int64_t kBatch = 2, kAction = 5, kHorizon = 8;
  const std::vector<std::pair<const char*, json>> cases{
      {"crop, shared encoder, FiLM scale", {{"crop_shape", {40, 56}}}},
      {"no crop, separate encoders, bias-only FiLM",
       {{"crop_shape", nullptr}, {"use_separate_rgb_encoder_per_camera", true}, {"use_film_scale_modulation", false}}},
      {"three levels, resize", {{"down_dims", {16, 32, 64}}, {"resize_shape", {36, 44}}, {"crop_shape", nullptr}}}};
  for (const auto& [name, changes] : cases) {
    const std::string what = name;
    CAPTURE(what);
    lrhost::policy::PolicyFeatures features;
    features.inputs.push_back({"observation.state", "STATE", {4}});
    for (int i = 0; i < 2; ++i)
      features.inputs.push_back({"observation.images.cam" + std::to_string(i), "VISUAL", {3, 48, 64}});
    features.outputs.push_back({"action", "ACTION", {kAction}});
    json table{{"type", "diffusion"},
               {"horizon", kHorizon},
               {"n_action_steps", 4},
               {"down_dims", {16, 32}},
               {"kernel_size", 5},
               {"n_groups", 8},
               {"diffusion_step_embed_dim", 8},
               {"spatial_softmax_num_keypoints", 4},
               {"use_group_norm", true}};
    table.update(changes);
    auto policy = lrhost::policy::create_policy(table, features);
    const auto counted = policy->training_flops_per_sample();
    REQUIRE(counted);
    torch::manual_seed(5);
    Batch batch{{"action", torch::randn({kBatch, kHorizon, kAction})},
                {"action_is_pad", torch::zeros({kBatch, kHorizon}, torch::kBool)}};
    for (const auto& feature : features.inputs) {
      std::vector<int64_t> shape{kBatch, 2};  // n_obs_steps 2
      shape.insert(shape.end(), feature.shape.begin(), feature.shape.end());
      batch[feature.key] = feature.type == "VISUAL" ? torch::rand(shape) : torch::randn(shape);
    }
    const double profiled = train_step_flops(*policy, batch, {3, kAction}) / kBatch;
    CHECK(*counted == doctest::Approx(profiled).epsilon(0.005));
  }
}

TEST_CASE("training flops: the mlp's count is the profiler's") {
  auto mlp = lrhost::test::small_mlp();  // 5 -> 7 -> 4 -> 3
  const auto counted = mlp->training_flops_per_sample();
  REQUIRE(counted);
  mlp->train();
  Batch batch{{"observation.state", torch::randn({4, 5})}, {"action", torch::randn({4, 3})}};
  const double profiled = profiled_matmul_flops([&] { mlp->run(batch).loss.backward(); }) / 4;
  CHECK(*counted == doctest::Approx(profiled).epsilon(0.005));
  CHECK(*counted == doctest::Approx(2.0 * (5 * 7 + 7 * 4 + 4 * 3) * 3 - 2.0 * 5 * 7));
}
