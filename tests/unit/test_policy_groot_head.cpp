// Unit tests of GR00T N1.7's action head (host/policy/groot) beyond the LeRobot interop
// (interop.groot_head): what its config refuses, the module names LeRobot's state dict uses, the
// flow-matching time's range, the state dropout and the loss mask.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <set>

#include "host/nn/module_weights.hpp"
#include "host/policy/groot/groot_action_head.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::policy::groot::GrootActionHead;
using lrhost::policy::groot::GrootHeadConfig;
using lrhost::policy::groot::GrootHeadInputs;
using nlohmann::json;

namespace {

json tiny() {
  return {{"backbone_embedding_dim", 16},
          {"hidden_size", 8},
          {"input_embedding_dim", 12},
          {"max_state_dim", 5},
          {"max_action_dim", 4},
          {"action_horizon", 3},
          {"max_seq_len", 8},
          {"max_num_embodiments", 4},
          {"diffusion_model_cfg",
           {{"num_layers", 2},
            {"num_attention_heads", 2},
            {"attention_head_dim", 6},
            {"output_dim", 8},
            {"norm_type", "ada_norm"},
            {"interleave_self_attention", true},
            {"positional_embeddings", nullptr}}},
          {"vl_self_attention_cfg", {{"num_layers", 1}, {"num_attention_heads", 2}, {"attention_head_dim", 8}}}};
}

std::string config_error(json config) {
  return lrhost::test::error_of<lrhost::util::ConfigError>([&] { GrootHeadConfig::from_json(config, "config.json"); });
}

}  // namespace

TEST_CASE("groot head config: LeRobot's defaults, and what the port does not build is refused by name") {
  const auto defaults = GrootHeadConfig::from_json(json::object(), "config.json");
  CHECK(defaults.dit.inner_dim() == 1536);
  CHECK(defaults.max_action_dim == 132);
  CHECK(defaults.vl_self_attention.num_layers == 4);
  auto with = [](const char* stack, const char* key, json value) {
    json c = tiny();
    if (stack)
      c[stack][key] = value;
    else
      c[key] = value;
    return c;
  };
  CHECK(config_error(with(nullptr, "use_alternate_vl_dit", false)).find("'use_alternate_vl_dit'") != std::string::npos);
  CHECK(
      config_error(with("diffusion_model_cfg", "positional_embeddings", "sinusoidal")).find("positional_embeddings") !=
      std::string::npos);
  CHECK(config_error(with("diffusion_model_cfg", "norm_type", "layer_norm")).find("norm_type") != std::string::npos);
  CHECK(config_error(with("diffusion_model_cfg", "output_dim", 7)).find("must equal hidden_size") != std::string::npos);
  CHECK(config_error(with(nullptr, "input_embedding_dim", 10)).find("input_embedding_dim") != std::string::npos);
  CHECK(config_error(with(nullptr, "max_seq_len", 2)).find("max_seq_len") != std::string::npos);
  CHECK(config_error(with("diffusion_model_cfg", "dropout", 1.5)).find("'dropout'") != std::string::npos);
}

TEST_CASE("groot head: LeRobot's module names, time in [0, noise_s], state dropout and the loss mask") {
  torch::manual_seed(0);
  GrootActionHead head(GrootHeadConfig::from_json(tiny(), "config.json"));
  std::set<std::string> keys;
  for (const auto& row : lrhost::nn::weight_table(*head)) keys.insert(row.key);
  for (const std::string key :
       {"model.timestep_encoder.timestep_embedder.linear_1.weight", "model.transformer_blocks.0.norm1.linear.weight",
        "model.transformer_blocks.0.attn1.to_out.0.bias", "model.transformer_blocks.1.ff.net.2.weight",
        "model.proj_out_2.weight", "state_encoder.layer1.W", "action_encoder.W2.b", "action_decoder.layer2.W",
        "vlln.weight", "vl_self_attention.transformer_blocks.0.norm3.bias", "position_embedding.weight"})
    CHECK_MESSAGE(keys.count(key), key);
  CHECK(!keys.count("model.transformer_blocks.0.norm3.weight"));  // the DiT's norm3 has no affine
  // Cross-attention keys read the VL width in even blocks, the tokens' in odd ones.
  CHECK(head->model->transformer_blocks->ptr<lrhost::policy::groot::BasicTransformerBlockImpl>(0)
            ->attn1->to_k->weight.size(1) == 16);
  CHECK(head->model->transformer_blocks->ptr<lrhost::policy::groot::BasicTransformerBlockImpl>(1)
            ->attn1->to_k->weight.size(1) == 12);

  const auto time = head->sample_time(4096);
  CHECK(time.min().item<double>() >= 0.0);
  CHECK(time.max().item<double>() <= 0.999 + 1e-7);
  // (1 - Beta(1.5, 1)) * 0.999 has mean 0.999 * (1 - 0.6) = 0.3996; 4096 draws: sd of the mean ~0.0035.
  CHECK(time.mean().item<double>() == doctest::Approx(0.3996).epsilon(0.05));

  head->eval();
  const int64_t B = 2;
  GrootHeadInputs in{torch::randn({B, 6, 16}), torch::ones({B, 6}, torch::kBool),
                     torch::tensor({0, 1, 1, 0, 0, 0}, torch::kBool).expand({B, 6}).clone(), torch::randn({B, 1, 5}),
                     torch::tensor({1, 3}, torch::kInt)};
  const auto action = torch::randn({B, 3, 4}), noise = torch::randn({B, 3, 4}), t = torch::tensor({0.2f, 0.7f});
  auto mask = torch::ones({B, 3, 4});
  const auto full = head->loss(in, action, mask, noise, t);
  CHECK(full.item<double>() > 0);
  CHECK(!torch::equal(head->loss(in, action, mask, noise, t, torch::tensor({true, false})), full));
  // The loss is the mean over the mask's elements: an empty mask gives 0, not NaN (the + 1e-6).
  CHECK(head->loss(in, action, torch::zeros_like(mask), noise, t).item<double>() == 0.0);
  CHECK(head->sample(in, noise).sizes() == noise.sizes());
  CHECK_THROWS_AS(head->loss(in, action, mask, noise.narrow(2, 0, 3), t), lrhost::util::DataError);
}
