// LoRA adapters (nn/lora.hpp), PEFT's target matching (nn/lora_targets.hpp), Python's fullmatch
// (text/unicode_regex.hpp) and the recipe's policy.peft table (policy/peft/peft_settings.hpp): the
// arithmetic, the draw order, dtypes, merging and every refusal. Parity with PEFT itself is the
// interop cases' (tests/interop/lora_*.py).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "host/ckpt/adapter_folder.hpp"
#include "host/nn/linear.hpp"
#include "host/nn/lora.hpp"
#include "host/nn/lora_targets.hpp"
#include "host/policy/peft/peft_settings.hpp"
#include "host/text/unicode_regex.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::nn::LoraInit;
using lrhost::nn::LoraSettings;
using lrhost::nn::LoraTargets;
using lrhost::util::ConfigError;
using nlohmann::json;

namespace {

LoraSettings lora_settings(int64_t r, double alpha, LoraInit init) {
  LoraSettings s;
  s.r = r;
  s.alpha = alpha;
  s.init = init;
  return s;
}

// A module tree with PEFT-style paths: model.expert.layers.{0,1}.{q_proj,v_proj,norm}, model.state_proj.
struct LoraTreeBlock : torch::nn::Module {
  LoraTreeBlock() {
    register_module("q_proj", torch::nn::Linear(4, 4));
    register_module("v_proj", torch::nn::Linear(4, 4));
    register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
  }
};
struct LoraTreeModel : torch::nn::Module {
  LoraTreeModel() {
    auto layers = torch::nn::ModuleList();
    layers->push_back(std::make_shared<LoraTreeBlock>());
    layers->push_back(std::make_shared<LoraTreeBlock>());
    auto expert = std::make_shared<torch::nn::Module>();
    expert->register_module("layers", layers);
    register_module("expert", expert);
    register_module("state_proj", torch::nn::Linear(3, 4));
  }
};
struct LoraTreeRoot : torch::nn::Module {
  LoraTreeRoot() { register_module("model", std::make_shared<LoraTreeModel>()); }
};

std::vector<std::string> adapted(const LoraTargets& targets, const std::vector<std::string>& save = {}) {
  LoraTreeRoot root;
  return lrhost::nn::select_lora_modules(root, targets, save, "test").adapted;
}

}  // namespace

TEST_CASE("python fullmatch: the whole name, trying every alternative; bad patterns say why") {
  using lrhost::text::PythonFullMatch;
  CHECK(PythonFullMatch("a|ab")("ab"));
  CHECK_FALSE(PythonFullMatch("q_proj")("model.q_proj"));
  CHECK(PythonFullMatch(".*q_proj")("model.q_proj"));
  CHECK_FALSE(PythonFullMatch(".*q_proj")("model.q_proj.lora_A"));
  CHECK(PythonFullMatch(R"((model\.(a|b)))")("model.b"));
  CHECK_THROWS_AS(PythonFullMatch("(unclosed"), std::invalid_argument);
}

TEST_CASE("lora: a fresh adapter changes nothing; its output is base + B(A(x)) * alpha / r") {
  torch::manual_seed(1);
  torch::nn::Linear layer(6, 4);
  const auto x = torch::randn({3, 5, 6});
  const auto base = lrhost::nn::apply_linear(layer, x);
  lrhost::nn::add_lora(*layer, lora_settings(2, 4, LoraInit::kaiming_uniform));
  const auto parts = lrhost::nn::lora_parts(*layer);
  REQUIRE(parts);
  CHECK(parts.down->weight.sizes().vec() == std::vector<int64_t>{2, 6});
  CHECK(parts.up->weight.sizes().vec() == std::vector<int64_t>{4, 2});
  CHECK(parts.up->weight.abs().sum().item<float>() == 0.0f);
  CHECK(torch::equal(lrhost::nn::apply_linear(layer, x), base));
  // Parameter names are PEFT's saved keys (less base_model.model.).
  std::vector<std::string> names;
  for (const auto& p : layer->named_parameters()) names.push_back(p.key());
  CHECK(names == std::vector<std::string>{"weight", "bias", "lora_A.weight", "lora_B.weight"});

  torch::nn::Linear random(6, 4);
  lrhost::nn::add_lora(*random, lora_settings(2, 4, LoraInit::none));
  const auto r = lrhost::nn::lora_parts(*random);
  const auto expected = torch::linear(x, random->weight, random->bias) +
                        torch::linear(torch::linear(x, r.down->weight), r.up->weight) * 2.0;
  CHECK(torch::equal(lrhost::nn::apply_linear(random, x), expected));
  CHECK_THROWS_AS(lrhost::nn::add_lora(*random, lora_settings(2, 4, LoraInit::none)), ConfigError);
  CHECK_THROWS_AS(lrhost::nn::add_lora(*layer, lora_settings(0, 4, LoraInit::none)), ConfigError);
}

TEST_CASE("lora: draws in PEFT's order (A, B by nn.Linear's init, then the reset) and PEFT's gaussian") {
  torch::manual_seed(7);
  torch::nn::Linear layer(16, 8);
  torch::manual_seed(11);
  lrhost::nn::add_lora(*layer, lora_settings(4, 8, LoraInit::kaiming_uniform));
  torch::manual_seed(11);
  auto a_init = torch::empty({4, 16}), b_init = torch::empty({8, 4}), a_reset = torch::empty({4, 16});
  torch::nn::init::kaiming_uniform_(a_init, std::sqrt(5.0));
  torch::nn::init::kaiming_uniform_(b_init, std::sqrt(5.0));
  torch::nn::init::kaiming_uniform_(a_reset, std::sqrt(5.0));
  CHECK(torch::equal(lrhost::nn::lora_parts(*layer).down->weight, a_reset));

  torch::nn::Linear wide(4000, 8);
  lrhost::nn::add_lora(*wide, lora_settings(4, 8, LoraInit::gaussian));
  // N(0, 1/r) = N(0, 0.25): the sample std of 16,000 draws is within 1 % of 0.25 with overwhelming
  // probability (its relative standard error is 1/sqrt(2n) = 0.56 %; 5 % is ~9 standard errors).
  const double std = lrhost::nn::lora_parts(*wide).down->weight.std().item<double>();
  CHECK(std == doctest::Approx(0.25).epsilon(0.05));
  CHECK(lora_settings(4, 8, LoraInit::none).scaling() == 2.0);
  auto rs = lora_settings(4, 8, LoraInit::none);
  rs.use_rslora = true;
  CHECK(rs.scaling() == 4.0);
}

TEST_CASE("lora: a bf16 base gets fp32 adapters holding bf16-rounded draws, and returns bf16") {
  torch::manual_seed(3);
  torch::nn::Linear layer(8, 4);
  layer->to(torch::kBFloat16);
  lrhost::nn::add_lora(*layer, lora_settings(2, 2, LoraInit::none));
  const auto parts = lrhost::nn::lora_parts(*layer);
  CHECK((parts.down->weight.scalar_type() == torch::kFloat32));
  CHECK((parts.up->weight.scalar_type() == torch::kFloat32));
  CHECK(torch::equal(parts.down->weight, parts.down->weight.to(torch::kBFloat16).to(torch::kFloat32)));
  const auto out = lrhost::nn::apply_linear(layer, torch::randn({2, 8}).to(torch::kBFloat16));
  CHECK((out.scalar_type() == torch::kBFloat16));
}

TEST_CASE("lora: the merged weight's Linear equals the adapted one within fp32 rounding") {
  torch::manual_seed(5);
  torch::nn::Linear layer(32, 16);
  lrhost::nn::add_lora(*layer, lora_settings(4, 16, LoraInit::none));
  const auto x = torch::randn({10, 32});
  const auto merged = torch::linear(x, lrhost::nn::merged_lora_weight(*layer), layer->bias);
  // Two summation orders of a 32 + 4 term dot product of O(1) values: a few ulps of the O(10) output.
  CHECK(torch::allclose(merged, lrhost::nn::apply_linear(layer, x), 1e-5, 1e-5));
  torch::nn::Linear plain(2, 2);
  CHECK_THROWS_AS(lrhost::nn::merged_lora_weight(*plain), ConfigError);
}

TEST_CASE("lora targets: PEFT's regex, list and all-linear forms, and modules_to_save") {
  const std::vector<std::string> q{"model.expert.layers.0.q_proj", "model.expert.layers.1.q_proj"};
  CHECK(adapted(LoraTargets::from_json(R"(.*\.q_proj)", "t")) == q);
  CHECK(adapted(LoraTargets::from_json(json::array({"q_proj"}), "t")) == q);
  CHECK(adapted(LoraTargets::from_json(json::array({"layers.1.v_proj", "state_proj"}), "t")) ==
        std::vector<std::string>{"model.expert.layers.1.v_proj", "model.state_proj"});
  const auto all = adapted(LoraTargets::from_json("ALL-LINEAR", "t"));
  CHECK(all.size() == 5);  // four projections and state_proj; the LayerNorms are no Linear
  // A module trained in full takes no adapter, and its parameters are listed.
  LoraTreeRoot root;
  auto selection =
      lrhost::nn::select_lora_modules(root, LoraTargets::from_json("all-linear", "t"), {"state_proj"}, "t");
  CHECK(selection.adapted.size() == 4);
  CHECK(selection.trained_fully == std::vector<std::string>{"model.state_proj"});
  CHECK(LoraTargets::from_json(json::array({"a", "b"}), "t").to_json() == json::array({"a", "b"}));
}

TEST_CASE("lora targets: what matches nothing, no Linear, or both, is an error naming it") {
  auto message = [](const LoraTargets& targets, std::vector<std::string> save = {}) {
    return lrhost::test::error_of<ConfigError>([&] { adapted(targets, save); });
  };
  const auto none = message(LoraTargets::from_json("q_proj", "t"));
  CHECK(lrhost::test::contains(none, "match no module of the policy"));
  CHECK(lrhost::test::contains(none, "model.expert.layers.0.q_proj"));  // the near names
  CHECK(lrhost::test::contains(message(LoraTargets::from_json(R"(.*\.norm)", "t")), "only Linear layers"));
  CHECK(lrhost::test::contains(message(LoraTargets::from_json("all-linear", "t"), {"nothing_here"}),
                               "full_training_modules entry 'nothing_here' matches no module"));
  // PEFT keeps adapters out of a modules_to_save entry's dotted path only, but trains in full every
  // module whose name merely ends with it: "te_proj" would be both on state_proj.
  CHECK(lrhost::test::contains(message(LoraTargets::from_json(json::array({"state_proj"}), "t"), {"te_proj"}),
                               "is both a LoRA target and trained in full"));
  CHECK_THROWS_AS(LoraTargets::from_json("(bad", "t"), ConfigError);
  CHECK_THROWS_AS(LoraTargets::from_json(json::array(), "t"), ConfigError);
  CHECK_THROWS_AS(LoraTargets::from_json(json::array({1}), "t"), ConfigError);
}

TEST_CASE("policy.peft: LeRobot's defaults, off when method_type is empty, and every refusal") {
  using lrhost::policy::PeftSettings;
  CHECK_FALSE(PeftSettings::read(json{{"method_type", ""}, {"r", 16}}, "policy.peft"));
  const auto lora = PeftSettings::read(json{{"method_type", "lora"}}, "policy.peft");
  REQUIRE(lora);
  CHECK(lora->lora.r == 16);
  CHECK(lora->lora.alpha == 8.0);  // PEFT's default when LeRobot passes None
  CHECK(lora->lora.init == LoraInit::kaiming_uniform);
  CHECK_FALSE(lora->targets);
  const auto custom = PeftSettings::read(json{{"method_type", "LORA"},
                                              {"r", 8},
                                              {"lora_alpha", 32},
                                              {"target_module_names", {"q_proj", "v_proj"}},
                                              {"full_training_modules", {"state_proj"}},
                                              {"init_type", "gaussian"},
                                              {"use_rslora", true}},
                                         "policy.peft");
  REQUIRE(custom);
  CHECK(custom->lora.scaling() == doctest::Approx(32 / std::sqrt(8.0)));
  CHECK(custom->targets->names == std::vector<std::string>{"q_proj", "v_proj"});
  CHECK(custom->full_training_modules == std::vector<std::string>{"state_proj"});

  auto refused = [](const json& table) {
    return lrhost::test::described_error([&] { PeftSettings::read(table, "policy.peft"); });
  };
  CHECK(lrhost::test::contains(refused({{"method_type", "MISS"}}), "'MISS' is not implemented"));
  CHECK(lrhost::test::contains(refused({{"method_type", "LORAX"}}), "expected \"LORA\""));
  CHECK(lrhost::test::contains(refused({{"method_type", "LORA"}, {"init_type", "pissa_niter_4"}}),
                               "a PEFT initialisation) is not implemented"));
  CHECK(lrhost::test::contains(
      refused({{"method_type", "LORA"}, {"target_modules", ".*q"}, {"target_module_names", {"q"}}}), "not both"));
  CHECK(lrhost::test::contains(refused({{"method_type", "LORA"}, {"lora_alpha", -1}}), "lora_alpha"));
  CHECK(lrhost::test::contains(refused({{"method_type", "LORA"}, {"lora_dropout", 1}}), "lora_dropout"));
  CHECK(lrhost::test::contains(refused({{"method_type", "LORA"}, {"rank", 4}}), "rank"));
  CHECK(lrhost::policy::init_lora_weights_json(LoraInit::gaussian) == "gaussian");
}

TEST_CASE("adapter_config.json: PEFT fields lrhost lacks are refused by name; patterns are read in order") {
  lrhost::test::TempDir dir("adapter_config_read");
  auto write = [&](const nlohmann::ordered_json& config) {
    std::ofstream(dir / "adapter_config.json") << config.dump();
  };
  const nlohmann::ordered_json base{{"peft_type", "LORA"},
                                    {"r", 8},
                                    {"lora_alpha", 16},
                                    {"target_modules", "model\\..*_proj"},
                                    {"base_model_name_or_path", "base"}};
  write(base);
  auto read = lrhost::ckpt::read_adapter_config(dir.path);
  CHECK(read.settings.lora.r == 8);
  CHECK(read.base_model_name_or_path == "base");
  auto patterned = base;
  patterned["rank_pattern"] = {{"b_proj", 4}, {"a_proj", 2}};
  write(patterned);
  CHECK(lrhost::ckpt::read_adapter_config(dir.path).settings.rank_pattern ==
        std::vector<std::pair<std::string, int64_t>>{{"b_proj", 4}, {"a_proj", 2}});
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::ordered_json>>{
           {"use_dora", true}, {"lora_bias", true}, {"bias", "all"}, {"layers_to_transform", {0}}}) {
    CAPTURE(key);
    auto refused = base;
    refused[key] = value;
    write(refused);
    CHECK_THROWS_WITH_AS(lrhost::ckpt::read_adapter_config(dir.path), doctest::Contains(key.c_str()),
                         lrhost::util::NotImplemented);
  }
  auto other = base;
  other["peft_type"] = "IA3";
  write(other);
  CHECK_THROWS_AS(lrhost::ckpt::read_adapter_config(dir.path), lrhost::util::NotImplemented);
  write(nlohmann::ordered_json{{"r", 8}});
  CHECK_THROWS_WITH_AS(lrhost::ckpt::read_adapter_config(dir.path), doctest::Contains("not a PEFT adapter config"),
                       lrhost::util::DataError);
}
