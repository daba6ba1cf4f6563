// LoRA on pi0/pi05 (host/policy/peft, host/nn/lora): with all-linear targets and random B, every
// adapter whose Linear the training loss reads gets a gradient, so no block applies a Linear without
// its adapter (apply_linear, linear.hpp); the ones without are exactly the Linears lrhost freezes in
// the plain policy because no gradient ever reaches them (the VLM's head and the last VLM layer's
// o_proj/MLP, the expert's head) and the last VLM layer's q_proj (an exactly-zero gradient).
#include <doctest/doctest.h>

#include <algorithm>

#include "host/policy/activation_probe.hpp"
#include "host/policy/peft/lora_adapters.hpp"
#include "host/policy/pi0/pi0_policy.hpp"
#include "host/policy/pi05/pi05_policy.hpp"
#include "test_support.hpp"

TEST_CASE("pi lora: every adapter the training forward uses gets a gradient (all-linear, random B)") {
  for (const std::string type : {"pi0", "pi05"}) {
    CAPTURE(type);
    const auto table = lrhost::test::tiny_pi_table(type);
    torch::manual_seed(3);
    std::shared_ptr<lrhost::policy::Policy> policy;
    if (type == "pi0")
      policy = std::make_shared<lrhost::policy::pi0::PI0Policy>(lrhost::policy::pi0::PI0Config::from_json(table));
    else
      policy = std::make_shared<lrhost::policy::pi05::PI05Policy>(lrhost::policy::pi05::PI05Config::from_json(table));
    // The Linears no gradient reaches: those the plain policy freezes, and the last VLM layer's q_proj,
    // whose gradient is exactly zero (the expert reads that layer's keys and values, never its queries).
    std::vector<std::string> unread;
    int last_vlm_layer = -1;
    const std::string vlm_layers = "model.paligemma_with_expert.paligemma.model.language_model.layers.";
    for (const auto& item : policy->named_modules("", false))
      if (item.key().rfind(vlm_layers, 0) == 0)
        last_vlm_layer = std::max(last_vlm_layer, std::stoi(item.key().substr(vlm_layers.size())));
    const std::string last_q = vlm_layers + std::to_string(last_vlm_layer) + ".self_attn.q_proj";
    for (const auto& item : policy->named_modules("", false))
      if (const auto* linear = item.value()->as<torch::nn::LinearImpl>();
          linear && (!linear->weight.requires_grad() || item.key() == last_q))
        for (const char* part : {"lora_A", "lora_B"}) unread.push_back(item.key() + "." + part + ".weight");
    CHECK(unread.size() > 2);

    auto peft = lrhost::policy::default_peft_table();
    peft["method_type"] = "LORA";
    peft["target_modules"] = "all-linear";
    peft["init_type"] = "false";
    lrhost::policy::add_lora_adapters(*policy, *lrhost::policy::PeftSettings::read(peft, "policy.peft"), "base");
    policy->train();
    // Random inputs: a zero input would leave its projection's adapter without a gradient.
    auto batch = lrhost::policy::example_batch(*policy, 2);
    for (auto& [key, tensor] : batch)
      if (tensor.is_floating_point()) tensor = torch::rand_like(tensor);
    policy->forward(batch).loss.backward();
    std::sort(unread.begin(), unread.end());
    CHECK(lrhost::test::lora_parameters_without_gradient(*policy) == unread);
  }
}

TEST_CASE("pi lora: openpi's preset, rank 16 on the VLM and 32 on the expert, SigLIP and projections in full") {
  const auto table = lrhost::test::tiny_pi_table("pi05");
  auto policy = std::make_shared<lrhost::policy::pi05::PI05Policy>(lrhost::policy::pi05::PI05Config::from_json(table));
  auto peft = lrhost::policy::default_peft_table();
  peft["method_type"] = "LORA";
  peft["preset"] = "openpi";
  lrhost::policy::add_lora_adapters(*policy, *lrhost::policy::PeftSettings::read(peft, "policy.peft"), "base");
  const auto params = policy->named_parameters();
  const std::string with_expert = "model.paligemma_with_expert.";
  CHECK(params[with_expert + "paligemma.model.language_model.layers.0.mlp.up_proj.lora_A.weight"].size(0) == 16);
  CHECK(params[with_expert + "gemma_expert.model.layers.0.self_attn.k_proj.lora_B.weight"].size(1) == 32);
  CHECK(params[with_expert + "paligemma.model.vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight"]
            .requires_grad());
  CHECK(params["model.time_mlp_in.weight"].requires_grad());
  CHECK(!params[with_expert + "paligemma.model.language_model.layers.0.mlp.up_proj.weight"].requires_grad());
  const auto& settings = policy->lora_adapters()->settings;  // as adapter_config.json records it
  CHECK(settings.preset.empty());
  CHECK(settings.rank_pattern == std::vector<std::pair<std::string, int64_t>>{{"gemma_expert\\..*", 32}});

  // The preset sets what it sets; anything else there is an error, as is a type without the preset.
  peft["r"] = 8;
  CHECK_THROWS_WITH_AS(lrhost::policy::PeftSettings::read(peft, "policy.peft"),
                       doctest::Contains("sets r, lora_alpha, the targets"), lrhost::util::ConfigError);
  peft["r"] = 16;
  peft["preset"] = "qlora";
  CHECK_THROWS_WITH_AS(lrhost::policy::PeftSettings::read(peft, "policy.peft"),
                       doctest::Contains("expected \"openpi\""), lrhost::util::ConfigError);
  peft["preset"] = "openpi";
  CHECK_THROWS_WITH_AS(
      lrhost::policy::resolve_peft_preset(*lrhost::policy::PeftSettings::read(peft, "policy.peft"), "smolvla"),
      doctest::Contains("no openpi LoRA recipe for 'smolvla'"), lrhost::util::ConfigError);
}
