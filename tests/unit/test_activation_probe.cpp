// The activation measurement `lrhost show` prints (host/policy/activation_probe.hpp): example
// batches a policy's forward accepts, built from its features alone, and the bytes per sample a
// training forward keeps alive, each checked against a count made another way: for a wide MLP from
// its layer shapes, for ACT and SmolVLA from the tensors autograd itself saves (saved-tensor hooks),
// within 25 %. A probe that reads 0 (the wrong allocator) or the process heap (a math library's
// buffers: 18.8 MB per sample for the MLP below on an AVX-512 Xeon) fails these.

// LibTorch before doctest: c10's logging header defines its own CHECK, which doctest's must replace.
#include <torch/csrc/autograd/engine.h>
#include <torch/torch.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "host/policy/activation_probe.hpp"
#include "host/policy/registry.hpp"
#include "host/policy/tensor_bytes_meter.hpp"
#include "test_support.hpp"

using lrhost::policy::create_policy;
using lrhost::policy::example_batch;
using lrhost::policy::measure_activations;
using lrhost::policy::PolicyFeatures;
using nlohmann::json;
namespace autograd = torch::autograd;

namespace {

// Saved-tensor hooks that keep an alias of each tensor autograd saves (the C++ side of
// torch.autograd.graph.saved_tensors_hooks); unpacking returns it, so a backward would still work.
struct KeepSaved final : autograd::SavedVariableHooks {
  explicit KeepSaved(std::vector<torch::Tensor>& sink) : sink_(sink) {}
  void call_pack_hook(const torch::Tensor& tensor) override {
    kept_ = tensor.detach();  // same storage, no autograd metadata: no reference cycle with the graph
    sink_.push_back(kept_);
  }
  torch::Tensor call_unpack_hook() override { return kept_; }

 private:
  std::vector<torch::Tensor>& sink_;
  torch::Tensor kept_;
};

// LibTorch asks the default autograd engine for the hooks every saved variable gets; this engine
// answers with KeepSaved while `sink` is set. It runs no backward, so it never starts threads.
struct SavedTensorEngine final : autograd::Engine {
  std::unique_ptr<autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    return sink != nullptr ? std::make_unique<KeepSaved>(*sink) : nullptr;
  }
  std::vector<torch::Tensor>* sink = nullptr;
};

SavedTensorEngine& saved_tensor_engine() {
  static auto* engine = new SavedTensorEngine;  // never destroyed: graphs may outlive the test
  return *engine;
}

// Bytes of the storages autograd saves during one training forward on `batch`, each storage once,
// without the parameters', buffers' and the batch's own (they exist before the forward).
int64_t saved_tensor_bytes(lrhost::policy::Policy& policy, const lrhost::policy::Batch& batch) {
  std::unordered_set<const void*> before;
  auto note = [&](const torch::Tensor& t) {
    if (t.defined() && t.has_storage()) before.insert(t.storage().unsafeGetStorageImpl());
  };
  for (const auto& p : policy.parameters()) note(p);
  for (const auto& b : policy.buffers()) note(b);
  for (const auto& [key, tensor] : batch) note(tensor);
  std::vector<torch::Tensor> saved;
  auto& engine = saved_tensor_engine();
  engine.sink = &saved;
  autograd::set_default_engine_stub([]() -> autograd::Engine& { return saved_tensor_engine(); });
  try {
    torch::AutoGradMode grad(true);
    policy.run(batch);
  } catch (...) {
    autograd::set_default_engine_stub(&autograd::Engine::get_base_engine);
    engine.sink = nullptr;
    throw;
  }
  autograd::set_default_engine_stub(&autograd::Engine::get_base_engine);
  engine.sink = nullptr;
  std::unordered_set<const void*> counted;
  int64_t bytes = 0;
  for (const auto& t : saved) {
    if (!t.has_storage()) continue;
    const void* storage = t.storage().unsafeGetStorageImpl();
    if (before.count(storage) == 0 && counted.insert(storage).second)
      bytes += static_cast<int64_t>(t.storage().nbytes());
  }
  return bytes;
}

// The independent figure per sample: saved bytes at batch 2 minus at batch 1, after a warm-up.
int64_t saved_bytes_per_sample(lrhost::policy::Policy& policy) {
  policy.train(true);
  saved_tensor_bytes(policy, example_batch(policy, 1));
  return saved_tensor_bytes(policy, example_batch(policy, 2)) - saved_tensor_bytes(policy, example_batch(policy, 1));
}

void check_within_a_quarter(int64_t measured, int64_t independent) {
  INFO("probe " << measured << " bytes per sample, autograd's saved tensors " << independent);
  CHECK(independent > 0);
  CHECK(measured >= independent * 3 / 4);
  CHECK(measured <= independent * 5 / 4);
}

}  // namespace

TEST_CASE("activation probe: a wide MLP keeps its hidden activation and prediction per sample") {
  // 16 -> 32768 (ReLU) -> 16 with MSE: autograd keeps ReLU's output (also the second linear's saved
  // input) and the prediction (MSE's saved input); the batch itself exists before the forward.
  auto mlp = create_policy(json{{"type", "mlp"}, {"input_dim", 16}, {"output_dim", 16}, {"hidden_dims", {32768}}}, {});
  const int64_t expected = 4 * (32768 + 16);
  auto batch = [](int64_t size) {
    return lrhost::policy::Batch{{"observation.state", torch::zeros({size, 16})}, {"action", torch::zeros({size, 16})}};
  };
  auto cost = measure_activations(*mlp, batch);
  CHECK(cost.per_sample >= expected);
  CHECK(cost.per_sample <= expected + expected / 10);
  CHECK(cost.one_sample >= expected);
  // The cross-check: those tensors live in the heap of the allocator in use, so it grew at least as
  // much (it may grow more: a math library's workspace).
  CHECK(cost.heap_per_sample >= expected * 9 / 10);
  CHECK(mlp->is_training());
  mlp->eval();
  measure_activations(*mlp, batch);
  CHECK(!mlp->is_training());  // the mode is restored
}

TEST_CASE("activation probe: the tensor meter counts this thread's CPU storages, not the heap's other blocks") {
  lrhost::policy::CpuTensorBytesMeter meter;
  auto kept = torch::empty({1000}, torch::kFloat);
  { auto freed = torch::empty({500}, torch::kDouble); }
  void* raw = std::malloc(1 << 20);  // not a tensor: not counted
  CHECK(meter.net_bytes() == 4000);
  CHECK(meter.peak_bytes() == 4000 + 4000);  // `freed` was alive beside `kept`
  std::free(raw);
  kept.reset();
  CHECK(meter.net_bytes() == 0);
  CHECK(meter.peak_bytes() == 8000);  // a peak stays
}

TEST_CASE("activation probe: ACT's example batch carries the action chunk, and the probe agrees with autograd") {
  PolicyFeatures features;
  features.inputs.push_back({"observation.images.top", "VISUAL", {3, 64, 64}});
  features.inputs.push_back({"observation.state", "STATE", {6}});
  features.outputs.push_back({"action", "ACTION", {6}});
  auto act = create_policy(json{{"type", "act"},
                                {"dim_model", 32},
                                {"n_heads", 4},
                                {"dim_feedforward", 64},
                                {"latent_dim", 8},
                                {"chunk_size", 5},
                                {"n_action_steps", 5},
                                {"n_encoder_layers", 1},
                                {"n_decoder_layers", 1},
                                {"n_vae_encoder_layers", 1}},
                           features);
  auto batch = example_batch(*act, 3);
  CHECK(batch.at("observation.images.top").sizes() == torch::IntArrayRef{3, 3, 64, 64});
  CHECK(batch.at("observation.state").sizes() == torch::IntArrayRef{3, 6});
  CHECK(batch.at("action").sizes() == torch::IntArrayRef{3, 5, 6});
  CHECK(batch.at("action_is_pad").sizes() == torch::IntArrayRef{3, 5});
  auto cost = measure_activations(*act);
  // At least the ResNet-18 trunk's first feature map per sample (64 x 32 x 32 fp32).
  CHECK(cost.per_sample > 4 * 64 * 32 * 32);
  check_within_a_quarter(cost.per_sample, saved_bytes_per_sample(*act));
}

TEST_CASE("activation probe: SmolVLA's figure agrees with the tensors autograd saves") {
  // A tiny SmolVLM (config only: weights start random) under a tiny SmolVLA.
  lrhost::test::TempDir dir("activation_probe_smolvla");
  const auto vlm = dir / "vlm";
  std::filesystem::create_directories(vlm);
  std::ofstream(vlm / "config.json") << json{
      {"model_type", "smolvlm"},
      {"scale_factor", 2},
      {"text_config",
       {{"model_type", "llama"},
        {"hidden_size", 64},
        {"intermediate_size", 128},
        {"num_hidden_layers", 4},
        {"num_attention_heads", 4},
        {"num_key_value_heads", 2},
        {"head_dim", 16},
        {"rms_norm_eps", 1e-5},
        {"vocab_size", 300}}},
      {"vision_config",
       {{"hidden_size", 32},
        {"intermediate_size", 64},
        {"num_hidden_layers", 2},
        {"num_attention_heads", 2},
        {"image_size", 64},
        {"patch_size", 16}}}}.dump();
  auto smolvla = create_policy(json{{"type", "smolvla"},
                                    {"vlm_model_name", vlm.string()},
                                    {"input_features",
                                     {{"observation.state", {{"type", "STATE"}, {"shape", {6}}}},
                                      {"observation.images.top", {{"type", "VISUAL"}, {"shape", {3, 48, 64}}}}}},
                                    {"output_features", {{"action", {{"type", "ACTION"}, {"shape", {6}}}}}},
                                    {"chunk_size", 5},
                                    {"n_action_steps", 3},
                                    {"num_vlm_layers", 4},
                                    {"resize_imgs_with_padding", {64, 64}}});
  auto cost = measure_activations(*smolvla);
  check_within_a_quarter(cost.per_sample, saved_bytes_per_sample(*smolvla));
}
