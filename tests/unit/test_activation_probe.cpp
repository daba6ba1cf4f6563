// The activation measurement `lrhost show` prints (host/policy/activation_probe.hpp): example
// batches a policy's forward accepts, built from its features alone, and the bytes per sample a
// training forward keeps alive, checked against what autograd must keep for a wide MLP.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/policy/activation_probe.hpp"
#include "host/policy/registry.hpp"

using lrhost::policy::create_policy;
using lrhost::policy::example_batch;
using lrhost::policy::measure_activations;
using lrhost::policy::PolicyFeatures;
using nlohmann::json;

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
  CHECK(mlp->is_training());
  mlp->eval();
  measure_activations(*mlp, batch);
  CHECK(!mlp->is_training());  // the mode is restored
}

TEST_CASE("activation probe: ACT's example batch carries the action chunk and its padding mask") {
  PolicyFeatures features;
  features.inputs.push_back({"observation.images.top", "VISUAL", {3, 64, 64}});
  features.inputs.push_back({"observation.state", "STATE", {6}});
  features.outputs.push_back({"action", "ACTION", {6}});
  auto act = create_policy(json{{"type", "act"},         {"dim_model", 32},  {"n_heads", 4},
                                {"dim_feedforward", 64}, {"latent_dim", 8},  {"chunk_size", 5},
                                {"n_action_steps", 5},   {"n_encoder_layers", 1}, {"n_decoder_layers", 1},
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
}
