// Unit tests of the Gemma / PaliGemma blocks (host/nn/gemma_*, paligemma_*): Gemma-2B's key/shape
// table, the (1 + w) norm and the adaptive norm's modulation order, the bf16 inv_freq quirk, the
// embedding scale, the joint-attention halves against forward(), config reading and weight-load
// errors. Exactness against LeRobot's PiGemma and transformers is tested in
// tests/interop/gemma_blocks_*.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "host/io/safetensors.hpp"
#include "host/nn/gemma_model.hpp"
#include "host/nn/module_weights.hpp"
#include "host/nn/paligemma_layout.hpp"
#include "host/nn/paligemma_model.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost;

namespace {

nn::GemmaConfig gemma_tiny_config(bool adaptive = false) {
  nn::GemmaConfig c;
  c.vocab_size = 17;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 1;
  c.head_dim = 8;
  c.use_adarms = adaptive;
  c.adarms_cond_dim = adaptive ? 12 : 0;
  return c;
}

double gemma_max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

}  // namespace

TEST_CASE("a Gemma-2B layer has LeRobot's keys and shapes: 8 query heads x 256, one KV head (pi0.md section 3)") {
  // A real layer (about 440 MB in fp32 for a moment): the table is what strict loading checks against.
  const auto config = nn::GemmaConfig::gemma_2b();
  CHECK(config.num_key_value_groups() == 8);
  auto table = [&](const nn::GemmaConfig& c) {
    torch::NoGradGuard no_grad;
    nn::GemmaDecoderLayer layer(c);
    return nn::weight_table(*layer, "layers.0.");
  };
  const auto rows = table(config);
  REQUIRE(rows.size() == 9);
  auto shape_of = [&](const std::string& key) {
    for (const auto& row : rows)
      if (row.key == key) return row.shape;
    FAIL("no key " << key);
    return std::vector<int64_t>{};
  };
  CHECK(shape_of("layers.0.self_attn.q_proj.weight") == std::vector<int64_t>{2048, 2048});
  CHECK(shape_of("layers.0.self_attn.k_proj.weight") == std::vector<int64_t>{256, 2048});
  CHECK(shape_of("layers.0.self_attn.v_proj.weight") == std::vector<int64_t>{256, 2048});
  CHECK(shape_of("layers.0.self_attn.o_proj.weight") == std::vector<int64_t>{2048, 2048});
  CHECK(shape_of("layers.0.mlp.gate_proj.weight") == std::vector<int64_t>{16384, 2048});
  CHECK(shape_of("layers.0.mlp.down_proj.weight") == std::vector<int64_t>{2048, 16384});
  CHECK(shape_of("layers.0.input_layernorm.weight") == std::vector<int64_t>{2048});
  int64_t count = 0;
  for (const auto& row : rows) {
    int64_t n = 1;
    for (auto d : row.shape) n *= d;
    count += n;
  }
  CHECK(count == 110104576);  // pi0.md section 1.1: per Gemma-2B layer

  // pi05's expert (Gemma-300M with adaRMS): dense [3072, 1024] + [3072] per norm, no weight.
  auto expert = nn::GemmaConfig::gemma_300m();
  expert.use_adarms = true;
  expert.adarms_cond_dim = 1024;
  int64_t expert_count = 0;
  bool has_dense = false, has_weight = false;
  for (const auto& row : table(expert)) {
    int64_t n = 1;
    for (auto d : row.shape) n *= d;
    expert_count += n;
    if (row.key == "layers.0.input_layernorm.dense.weight") has_dense = row.shape == std::vector<int64_t>{3072, 1024};
    if (row.key == "layers.0.input_layernorm.weight") has_weight = true;
  }
  CHECK(has_dense);
  CHECK_FALSE(has_weight);
  CHECK(expert_count == 23599104);  // pi0.md section 1.1: per pi05 expert layer
}

TEST_CASE("Gemma RMSNorm scales by (1 + w) in fp32 and casts the product back") {
  nn::GemmaRMSNorm norm(8, 1e-6);
  auto x = torch::randn({2, 3, 8});
  auto expected = x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6);
  CHECK(gemma_max_diff(norm->forward(x), expected) < 1e-6);  // w = 0 at construction: identity scale
  {
    torch::NoGradGuard no_grad;
    norm->weight.fill_(0.5);
  }
  CHECK(gemma_max_diff(norm->forward(x), expected * 1.5) < 1e-6);
  // bf16 input: statistics and the (1 + w) product in fp32, one rounding at the end.
  auto xb = x.to(torch::kBFloat16);
  const auto xf = xb.to(torch::kFloat32);
  auto ref = (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + 1e-6) * 1.5).to(torch::kBFloat16);
  auto out = norm->forward(xb);
  CHECK((out.scalar_type() == torch::kBFloat16));
  CHECK(torch::equal(out, ref));
  // A plain norm ignores a condition and has no gate.
  CHECK_FALSE(norm->forward_with_gate(x, torch::randn({2, 4})).gate.defined());
}

TEST_CASE("adaptive RMSNorm splits dense(cond) into scale, shift, gate in that order") {
  nn::GemmaRMSNorm norm(4, 1e-6, /*cond_dim=*/3);
  CHECK(norm->adaptive());
  {
    torch::NoGradGuard no_grad;
    CHECK(norm->dense->weight.abs().sum().item<double>() == 0.0);  // zero init, as LeRobot
    norm->dense->bias.copy_(torch::tensor({1.f, 1.f, 1.f, 1.f, 2.f, 2.f, 2.f, 2.f, 3.f, 3.f, 3.f, 3.f}));
  }
  auto x = torch::randn({2, 5, 4});
  auto cond = torch::randn({2, 3});
  auto out = norm->forward_with_gate(x, cond);
  auto normed = x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6);
  CHECK(gemma_max_diff(out.hidden, normed * 2 + 2) < 1e-5);  // (1 + scale 1), shift 2
  CHECK(out.gate.sizes() == c10::IntArrayRef({2, 1, 4}));
  CHECK(gemma_max_diff(out.gate, torch::full({2, 1, 4}, 3.0)) < 1e-6);
  CHECK(gemma_max_diff(nn::gated_residual(x, out.hidden, out.gate), x + out.hidden * 3) < 1e-6);
  CHECK_THROWS_AS(norm->forward(x), util::DataError);                                  // needs its condition
  CHECK_THROWS_AS(norm->forward_with_gate(x, torch::randn({2, 5})), util::DataError);  // wrong width
}

TEST_CASE("the embedding scales by sqrt(hidden) rounded to the weight dtype: 45.25 for Gemma-2B in bf16") {
  nn::GemmaScaledEmbedding embedding(10, 2048, 0);
  CHECK(embedding->scale() == doctest::Approx(std::sqrt(2048.0)).epsilon(1e-7));
  CHECK(embedding->scale() != 45.25);
  auto ids = torch::tensor({{1, 0, 9}}, torch::kLong);
  auto out = embedding->forward(ids);
  CHECK(out.sizes() == c10::IntArrayRef({1, 3, 2048}));
  CHECK(gemma_max_diff(out[0][0], embedding->weight[1] * static_cast<float>(std::sqrt(2048.0))) < 1e-5);
  embedding->to(torch::kBFloat16);
  CHECK(embedding->scale() == 45.25);
  auto out16 = embedding->forward(ids);
  CHECK((out16.scalar_type() == torch::kBFloat16));
  CHECK(torch::equal(out16[0][2], embedding->weight[9] * torch::scalar_tensor(45.25, torch::kBFloat16)));
  CHECK_THROWS_AS(embedding->forward(torch::tensor({10}, torch::kLong)), util::DataError);
  CHECK_THROWS_AS(embedding->forward(torch::tensor({1.0f})), util::DataError);
  // The pad row gets no gradient (nn.Embedding's padding_idx).
  nn::GemmaScaledEmbedding trainable(10, 4, 0);
  trainable->forward(torch::tensor({0, 3}, torch::kLong)).sum().backward();
  CHECK(trainable->weight.grad()[0].abs().sum().item<double>() == 0.0);
  CHECK(trainable->weight.grad()[3].abs().sum().item<double>() > 0.0);
}

TEST_CASE("LeRobot's bf16 split rounds inv_freq through bf16 and keeps the norms fp32") {
  nn::GemmaModel model(gemma_tiny_config());
  const auto before = model->rotary_emb().inv_freq().clone();
  model->to_lerobot_bfloat16();
  const auto after = model->rotary_emb().inv_freq();
  CHECK((after.scalar_type() == torch::kFloat32));
  CHECK(torch::equal(after, before.to(torch::kBFloat16).to(torch::kFloat32)));
  CHECK_FALSE(torch::equal(after, before));
  CHECK((model->layer(0)->self_attn->q_proj->weight.scalar_type() == torch::kBFloat16));
  CHECK((model->embed_tokens->weight.scalar_type() == torch::kBFloat16));
  CHECK((model->layer(1)->post_attention_layernorm->weight.scalar_type() == torch::kFloat32));
  CHECK((model->norm->weight.scalar_type() == torch::kFloat32));
  // Gemma-2B at position 1000: one frequency's angle moves by more than a radian (pi0.md section 1.1).
  nn::LlamaRotaryEmbedding exact(256, 10000.0), rounded(256, 10000.0);
  rounded.round_inv_freq_through(torch::kBFloat16);
  const auto worst = ((exact.inv_freq() - rounded.inv_freq()) * 1000.0).abs().max().item<double>();
  CHECK(worst > 1.0);
  CHECK(worst < 1.5);
  // A bf16 model runs an fp32 input (cast to bf16 first, as PiGemmaModel does).
  auto out = model->forward(torch::randn({1, 4, 32}), torch::arange(4).unsqueeze(0));
  CHECK((out.scalar_type() == torch::kBFloat16));
}

TEST_CASE("the layer's halves around one joint attention equal forward() for a single stream") {
  torch::manual_seed(3);
  for (bool adaptive : {false, true}) {
    CAPTURE(adaptive);
    auto config = gemma_tiny_config(adaptive);
    nn::GemmaDecoderLayer layer(config);
    {
      torch::NoGradGuard no_grad;
      for (auto& p : layer->parameters()) p.copy_(torch::randn_like(p) * 0.3);
    }
    auto x = torch::randn({2, 6, 32});
    auto cond = adaptive ? torch::randn({2, 12}) : torch::Tensor();
    auto positions = torch::arange(6).unsqueeze(0).repeat({2, 1});
    nn::LlamaRotaryEmbedding rotary(8, 10000.0);
    auto rope = rotary.tables(positions, torch::kFloat32);
    auto allowed = torch::ones({2, 6, 6}, torch::kBool);
    allowed.index_put_({1, torch::indexing::Slice(), torch::indexing::Slice(4)}, false);
    auto mask = nn::additive_attention_mask(allowed);
    CHECK(mask.sizes() == c10::IntArrayRef({2, 1, 6, 6}));
    CHECK(mask[1][0][0][5].item<float>() == doctest::Approx(-2.3819763e38));
    auto whole = layer->forward(x, rope, mask, cond);
    auto input = layer->begin(x, cond);
    CHECK(input.qkv.query.sizes() == c10::IntArrayRef({2, 6, 8, 8}));
    CHECK(input.qkv.key.sizes() == c10::IntArrayRef({2, 6, 1, 8}));
    CHECK(input.gate.defined() == adaptive);
    auto attended = nn::gemma_attend(input.qkv.query, input.qkv.key, input.qkv.value, rope, mask);
    CHECK(torch::equal(layer->finish(x, attended, input.gate, cond), whole));
    // A boolean mask means the same as pi0's additive one when no row is fully masked.
    CHECK(gemma_max_diff(layer->forward(x, rope, allowed, cond), whole) < 1e-5);
  }
}

TEST_CASE("gemma config: LeRobot's geometries, text_config reading and errors naming the key") {
  CHECK(nn::GemmaConfig::gemma_300m().hidden_size == 1024);
  CHECK(nn::GemmaConfig::gemma_300m().intermediate_size == 4096);
  auto c = nn::gemma_config_from_json(
      nlohmann::json{{"model_type", "gemma"},
                     {"hidden_size", 64},
                     {"intermediate_size", 128},
                     {"num_attention_heads", 8},
                     {"num_key_value_heads", 1},
                     {"head_dim", 16},
                     {"num_hidden_layers", 2},
                     {"vocab_size", 64},
                     {"use_adarms", true},
                     {"adarms_cond_dim", 32},
                     {"rope_parameters", {{"rope_theta", 10000.0}, {"rope_type", "default"}}}},
      "text_config");
  CHECK(c.hidden_act == "gelu_pytorch_tanh");
  CHECK(c.use_adarms);
  CHECK(c.adarms_cond_dim == 32);
  CHECK(c.head_dim == 16);
  auto defaults = nn::gemma_config_from_json(nlohmann::json::object(), "gemma");
  CHECK(defaults.head_dim == 256);
  CHECK(defaults.num_key_value_heads == 16);
  CHECK(test::described_error<util::ConfigError>([] {
          nn::gemma_config_from_json(nlohmann::json{{"model_type", "gemma2"}}, "cfg: text_config");
        }).find("cfg: text_config: 'model_type' must be 'gemma'") != std::string::npos);
  CHECK(test::described_error<util::ConfigError>([] {
          nn::gemma_config_from_json(nlohmann::json{{"hidden_act", "silu"}}, "cfg");
        }).find("'hidden_act'") != std::string::npos);
  CHECK(test::described_error<util::ConfigError>([] {
          nn::gemma_config_from_json(nlohmann::json{{"use_adarms", true}}, "cfg");
        }).find("'adarms_cond_dim'") != std::string::npos);
  // PaliGemma: the projector must feed the language model.
  auto pali = nn::PaliGemmaConfig::so400m_gemma_2b();
  CHECK(pali.vision.num_patches() == 256);
  CHECK(pali.vision.head_dim() == 72);
  pali.projection_dim = 1024;
  CHECK(test::described_error<util::ConfigError>([&] { pali.validate("pali"); }).find("projection_dim") !=
        std::string::npos);
}

TEST_CASE("PaliGemma: image features are projector(tower(pixels)) with LeRobot's keys; load errors name the key") {
  nn::PaliGemmaConfig config;
  config.vision.hidden_size = 16;
  config.vision.intermediate_size = 24;
  config.vision.num_hidden_layers = 1;
  config.vision.num_attention_heads = 2;
  config.vision.image_size = 16;
  config.vision.patch_size = 8;
  config.text = gemma_tiny_config();
  config.projection_dim = 32;
  nn::PaliGemmaModel model(config);
  auto pixels = torch::rand({2, 3, 16, 16}) * 2 - 1;
  auto features = model->embed_image(pixels);
  CHECK(features.sizes() == c10::IntArrayRef({2, 4, 32}));
  auto tower = model->vision_tower->vision_model->forward(pixels);
  CHECK(torch::equal(features, model->multi_modal_projector->forward(tower)));
  const auto rows = nn::weight_table(*model, "p.");
  bool projector = false, tower_key = false;
  for (const auto& row : rows) {
    projector |= row.key == "p.multi_modal_projector.linear.bias";
    tower_key |= row.key == "p.vision_tower.vision_model.post_layernorm.weight";
  }
  CHECK(projector);
  CHECK(tower_key);

  // Round trip through a file, then the errors: missing key, wrong shape, unexpected key.
  test::TempDir scratch("gemma");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : model->named_parameters()) tensors.emplace_back("p." + item.key(), item.value().detach());
  const auto file = scratch / "model.safetensors";
  io::write_safetensors(file, tensors);
  nn::PaliGemmaModel loaded(config);
  nn::load_module_weights(*loaded, file, {.prefix = "p."});
  CHECK(torch::equal(loaded->embed_image(pixels), features));

  auto without = tensors;
  std::erase_if(without, [](const auto& item) { return item.first == "p.language_model.norm.weight"; });
  io::write_safetensors(file, without);
  auto message =
      test::described_error<util::DataError>([&] { nn::load_module_weights(*loaded, file, {.prefix = "p."}); });
  CHECK(message.find(file.string()) != std::string::npos);
  CHECK(message.find("missing weight 'p.language_model.norm.weight'") != std::string::npos);

  auto misshaped = tensors;
  for (auto& [key, tensor] : misshaped)
    if (key == "p.language_model.layers.0.self_attn.k_proj.weight") tensor = torch::zeros({64, 32});
  io::write_safetensors(file, misshaped);
  message = test::described_error<util::DataError>([&] { nn::load_module_weights(*loaded, file, {.prefix = "p."}); });
  CHECK(message.find("'p.language_model.layers.0.self_attn.k_proj.weight' has shape [64, 32], expected [8, 32]") !=
        std::string::npos);

  auto extra = tensors;
  extra.emplace_back("p.language_model.layers.0.input_layernorm.dense.weight", torch::zeros({96, 32}));
  io::write_safetensors(file, extra);
  message = test::described_error<util::DataError>([&] { nn::load_module_weights(*loaded, file, {.prefix = "p."}); });
  CHECK(message.find("unexpected weights") != std::string::npos);
  CHECK(message.find("input_layernorm.dense.weight") != std::string::npos);
}

namespace {

std::vector<nn::TensorLayout> sorted_layout(std::vector<nn::TensorLayout> layout) {
  std::sort(layout.begin(), layout.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return layout;
}

}  // namespace

TEST_CASE("paligemma_with_expert_layout lists exactly the modules' weights (tiny), plus the two lm_heads") {
  nn::PaliGemmaConfig config;
  config.vision.hidden_size = 16;
  config.vision.intermediate_size = 24;
  config.vision.num_hidden_layers = 2;
  config.vision.num_attention_heads = 2;
  config.vision.image_size = 16;
  config.vision.patch_size = 8;
  config.text = gemma_tiny_config();
  config.projection_dim = 32;
  for (bool adaptive : {false, true}) {
    CAPTURE(adaptive);
    auto expert = gemma_tiny_config(adaptive);
    expert.hidden_size = 24;
    nn::PaliGemmaModel vlm(config);
    nn::GemmaModel expert_model(expert, /*with_embeddings=*/false);
    std::vector<nn::TensorLayout> built;
    for (const auto& row : nn::weight_table(*vlm, "paligemma.model.")) built.push_back({row.key, row.shape});
    for (const auto& row : nn::weight_table(*expert_model, "gemma_expert.model."))
      built.push_back({row.key, row.shape});
    built.push_back({"paligemma.lm_head.weight", {17, 32}});
    built.push_back({"gemma_expert.lm_head.weight", {17, 24}});
    CHECK((sorted_layout(nn::paligemma_with_expert_layout(config, expert)) == sorted_layout(built)));
  }
}

TEST_CASE("paligemma_with_expert_layout at full size: LeRobot's 778 (pi0) / 813 (pi05) tensors with the heads") {
  // pi0.md section 1.1 (meta-device build of LeRobot 0.6.1): the policy's own projections sit outside
  // paligemma_with_expert and are listed here; the rest is the layout.
  const auto vlm = nn::PaliGemmaConfig::so400m_gemma_2b();
  auto expert = nn::GemmaConfig::gemma_300m();
  const std::vector<nn::TensorLayout> pi0_heads{{"state_proj.weight", {1024, 32}},
                                                {"state_proj.bias", {1024}},
                                                {"action_in_proj.weight", {1024, 32}},
                                                {"action_in_proj.bias", {1024}},
                                                {"action_out_proj.weight", {32, 1024}},
                                                {"action_out_proj.bias", {32}},
                                                {"action_time_mlp_in.weight", {1024, 2048}},
                                                {"action_time_mlp_in.bias", {1024}},
                                                {"action_time_mlp_out.weight", {1024, 1024}},
                                                {"action_time_mlp_out.bias", {1024}}};
  const std::vector<nn::TensorLayout> pi05_heads{
      {"action_in_proj.weight", {1024, 32}},  {"action_in_proj.bias", {1024}},
      {"action_out_proj.weight", {32, 1024}}, {"action_out_proj.bias", {32}},
      {"time_mlp_in.weight", {1024, 1024}},   {"time_mlp_in.bias", {1024}},
      {"time_mlp_out.weight", {1024, 1024}},  {"time_mlp_out.bias", {1024}}};
  auto count = [](const std::vector<nn::TensorLayout>& layout, const std::string& part) {
    std::vector<nn::TensorLayout> selected;
    for (const auto& entry : layout)
      if (entry.key.find(part) != std::string::npos) selected.push_back(entry);
    return std::make_pair(selected.size(), nn::layout_numel(selected));
  };

  const auto pi0 = nn::paligemma_with_expert_layout(vlm, expert);
  CHECK(pi0.size() + pi0_heads.size() == 778);
  CHECK(nn::layout_numel(pi0) + nn::layout_numel(pi0_heads) == 4028019472LL);
  CHECK(count(pi0, "vision_tower.") == std::make_pair(std::size_t{437}, int64_t{412442352}));
  CHECK(count(pi0, "multi_modal_projector.") == std::make_pair(std::size_t{2}, int64_t{2361344}));
  CHECK(count(pi0, "language_model.embed_tokens.") == std::make_pair(std::size_t{1}, int64_t{526647296}));
  CHECK(count(pi0, "paligemma.lm_head.") == std::make_pair(std::size_t{1}, int64_t{526647296}));
  CHECK(count(pi0, "gemma_expert.model.") == std::make_pair(std::size_t{163}, int64_t{311464960}));
  CHECK(count(pi0, "gemma_expert.lm_head.") == std::make_pair(std::size_t{1}, int64_t{263323648}));
  CHECK(nn::layout_numel(pi0_heads) == 3248160);

  expert.use_adarms = true;
  expert.adarms_cond_dim = 1024;
  const auto pi05 = nn::paligemma_with_expert_layout(vlm, expert);
  CHECK(pi05.size() + pi05_heads.size() == 813);
  CHECK(nn::layout_numel(pi05) + nn::layout_numel(pi05_heads) == 4143404816LL);
  CHECK(count(pi05, "gemma_expert.model.") == std::make_pair(std::size_t{200}, int64_t{427932672}));
  CHECK(count(pi05, "gemma_expert.model.norm.") == std::make_pair(std::size_t{2}, int64_t{3148800}));
  CHECK(nn::layout_numel(pi05_heads) == 2165792);
  // The rows of pi0.md section 3 that differ in shape between the two towers.
  auto shape = [](const std::vector<nn::TensorLayout>& layout, const std::string& key) {
    for (const auto& entry : layout)
      if (entry.key == key) return entry.shape;
    return std::vector<int64_t>{};
  };
  const std::string vision = "paligemma.model.vision_tower.vision_model.";
  CHECK(shape(pi05, vision + "embeddings.patch_embedding.weight") == std::vector<int64_t>{1152, 3, 14, 14});
  CHECK(shape(pi05, vision + "embeddings.position_embedding.weight") == std::vector<int64_t>{256, 1152});
  CHECK(shape(pi05, vision + "encoder.layers.26.mlp.fc1.weight") == std::vector<int64_t>{4304, 1152});
  CHECK(shape(pi05, "gemma_expert.model.layers.17.self_attn.q_proj.weight") == std::vector<int64_t>{2048, 1024});
  CHECK(shape(pi05, "gemma_expert.model.layers.17.self_attn.o_proj.weight") == std::vector<int64_t>{1024, 2048});
  CHECK(shape(pi05, "gemma_expert.model.layers.0.input_layernorm.dense.weight") == std::vector<int64_t>{3072, 1024});
  CHECK(shape(pi05, "gemma_expert.model.layers.0.input_layernorm.weight").empty());
  CHECK(shape(pi0, "gemma_expert.model.layers.0.input_layernorm.weight") == std::vector<int64_t>{1024});
  CHECK(shape(pi05, "paligemma.model.language_model.layers.0.self_attn.k_proj.weight") ==
        std::vector<int64_t>{256, 2048});
}
