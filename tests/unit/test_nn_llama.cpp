// Unit tests of the Llama/SmolLM2 decoder parts (host/nn/llama_*, rms_norm, rotary_embedding,
// attention_core): SmolVLM2-500M's key/shape table, RoPE properties, the attention kernels'
// agreement and SmolVLA's fully-masked-row behaviour, config reading and weight-load errors.
// Exactness against transformers and LeRobot is tested in tests/interop/vlm_decoder_*.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <fstream>

#include "host/io/safetensors.hpp"
#include "host/nn/llama_model.hpp"
#include "host/nn/module_weights.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::write_text;

using namespace lrhost;

namespace {

// SmolVLM2-500M-Video-Instruct's text_config (reference smolvla.md §1).
nn::LlamaConfig smolvlm2_text_config() {
  nn::LlamaConfig c;
  c.vocab_size = 49280;
  c.hidden_size = 960;
  c.intermediate_size = 2560;
  c.num_hidden_layers = 32;
  c.num_attention_heads = 15;
  c.num_key_value_heads = 5;
  c.head_dim = 64;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 100000;
  return c;
}

nn::LlamaConfig tiny_llama_config() {
  nn::LlamaConfig c;
  c.vocab_size = 11;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 1000;
  return c;
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// A (B, L, L) mask without fully masked rows: causal, right padding in row 1, a bidirectional
// 3-token prefix in row 2.
torch::Tensor mixed_mask(int64_t batch, int64_t length) {
  auto mask = torch::ones({length, length}, torch::kBool).tril().unsqueeze(0).repeat({batch, 1, 1});
  using torch::indexing::Slice;
  if (batch > 1) mask.index_put_({1, Slice(), Slice(length - 2)}, false);
  if (batch > 2) mask.index_put_({2, Slice(0, 3), Slice(0, 3)}, true);
  return mask;
}

}  // namespace

TEST_CASE("a SmolVLM2-500M text layer has transformers' keys and shapes (reference smolvla.md section 2)") {
  nn::LlamaDecoderLayer layer(smolvlm2_text_config());
  const auto rows = nn::weight_table(*layer, "model.text_model.layers.0.");
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected{
      {"model.text_model.layers.0.self_attn.q_proj.weight", {960, 960}},
      {"model.text_model.layers.0.self_attn.k_proj.weight", {320, 960}},
      {"model.text_model.layers.0.self_attn.v_proj.weight", {320, 960}},
      {"model.text_model.layers.0.self_attn.o_proj.weight", {960, 960}},
      {"model.text_model.layers.0.mlp.gate_proj.weight", {2560, 960}},
      {"model.text_model.layers.0.mlp.up_proj.weight", {2560, 960}},
      {"model.text_model.layers.0.mlp.down_proj.weight", {960, 2560}},
      {"model.text_model.layers.0.input_layernorm.weight", {960}},
      {"model.text_model.layers.0.post_attention_layernorm.weight", {960}},
  };
  REQUIRE(rows.size() == expected.size());
  int64_t count = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i].key == expected[i].first);
    CHECK(rows[i].shape == expected[i].second);
    int64_t n = 1;
    for (auto d : rows[i].shape) n *= d;
    count += n;
  }
  CHECK(count == 9'832'320);
  CHECK(16 * count == 157'317'120);  // SmolVLA's 16 kept text layers: 157.3 M (section 0)
}

TEST_CASE("the text model registers embed_tokens, layers and norm; init follows transformers") {
  auto config = tiny_llama_config();
  nn::LlamaModel model(config, /*num_layers=*/3);
  auto rows = nn::weight_table(*model, "model.text_model.");
  REQUIRE(rows.size() == 2 + 3 * 9);
  CHECK(rows.front().key == "model.text_model.embed_tokens.weight");
  CHECK(rows.front().shape == std::vector<int64_t>{11, 32});
  CHECK(rows[1].key == "model.text_model.layers.0.self_attn.q_proj.weight");
  CHECK(rows.back().key == "model.text_model.norm.weight");
  CHECK(model->named_buffers().size() == 0);  // inv_freq is not persistent in transformers

  config.attention_bias = config.mlp_bias = true;
  nn::LlamaDecoderLayer biased(config);
  CHECK(nn::weight_table(*biased).size() == 9 + 7);
  torch::manual_seed(0);
  nn::init_llama_weights(*biased, 0.02);
  CHECK(biased->self_attn->q_proj->bias.abs().max().item<double>() == 0.0);
  CHECK(biased->input_layernorm->weight.eq(1).all().item<bool>());
  const double std = biased->mlp->gate_proj->weight.std().item<double>();
  CHECK(std == doctest::Approx(0.02).epsilon(0.1));

  // SmolVLA's cross-attention expert layers: k/v read the VLM's 320-d keys and values.
  nn::LlamaAttention cross(smolvlm2_text_config(), /*kv_input_size=*/320);
  CHECK(cross->k_proj->weight.sizes() == torch::IntArrayRef({320, 320}));
}

TEST_CASE("RMSNorm computes in fp32 and casts back before the weight, like LlamaRMSNorm") {
  nn::RMSNorm norm(16, 1e-5);
  torch::NoGradGuard no_grad;
  norm->weight.copy_(torch::linspace(0.5, 1.5, 16));
  auto x = torch::randn({2, 3, 16}).to(torch::kBFloat16);
  auto xf = x.to(torch::kFloat32);
  auto expected = norm->weight * (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + 1e-5)).to(torch::kBFloat16);
  auto out = norm->forward(x);
  CHECK((out.scalar_type() == torch::kFloat32));  // fp32 weight · bf16 normalised input promotes
  CHECK(torch::equal(out, expected));
  norm->to(torch::kBFloat16);
  CHECK((norm->forward(x).scalar_type() == torch::kBFloat16));
}

TEST_CASE("the SwiGLU MLP is down(silu(gate(x)) * up(x)) with at::linear's rounding") {
  nn::LlamaMLP mlp(8, 12, /*bias=*/true);
  mlp->to(torch::kBFloat16);
  auto x = torch::randn({2, 5, 8}).to(torch::kBFloat16);
  auto linear = [](const torch::nn::Linear& p, const torch::Tensor& in) {
    return torch::linear(in, p->weight, p->bias);
  };
  auto expected = linear(mlp->down_proj, torch::silu(linear(mlp->gate_proj, x)) * linear(mlp->up_proj, x));
  // Bit-exact: Python's nn.Linear is at::linear (fused bias); the C++ frontend's Linear::forward on a
  // 3-D input adds the bias separately, which changes bf16 results (found by the interop check).
  CHECK(torch::equal(mlp->forward(x), expected));
  CHECK_THROWS_WITH_AS(nn::LlamaMLP(8, 12, false, "relu"), doctest::Contains("'relu'"), util::ConfigError);
}

TEST_CASE("RoPE: position 0 is the identity and q.k depends only on the relative position") {
  torch::manual_seed(1);
  nn::LlamaRotaryEmbedding rope(16, 100000);
  auto q = torch::randn({1, 1, 2, 16}), k = torch::randn({1, 1, 2, 16});
  auto at = [&](const torch::Tensor& x, int64_t position, bool smolvla) {
    auto pos = torch::full({1, 1}, position, torch::kInt64);
    return smolvla ? nn::apply_rope_fp32(x, pos, 100000)
                   : nn::apply_rotary_pos_emb(x, rope.tables(pos, x.scalar_type()));
  };
  for (bool smolvla : {false, true}) {
    CAPTURE(smolvla);
    CHECK(torch::equal(at(q, 0, smolvla), q));
    auto dot = [&](int64_t pq, int64_t pk) { return (at(q, pq, smolvla) * at(k, pk, smolvla)).sum(-1); };
    // fp32 angles at position ~100 carry ~1e-5 rad of rounding, hence 1e-3 on |q||k| ~ 16.
    CHECK(max_diff(dot(7, 3), dot(107, 103)) < 1e-3);
    CHECK(max_diff(dot(0, 5), dot(40, 45)) < 1e-3);
    CHECK(max_diff(dot(7, 3), dot(3, 7)) > 1e-2);  // but does depend on it (not a no-op)
  }
  // Layouts: (B, L, H, D) with heads_dim 2 equals transformers' (B, H, L, D) with heads_dim 1.
  auto pos = torch::tensor({{3, 9, 27}}, torch::kInt64);
  auto x = torch::randn({1, 3, 2, 16});
  auto tables = rope.tables(pos, torch::kFloat32);
  CHECK(torch::equal(nn::apply_rotary_pos_emb(x, tables).transpose(1, 2),
                     nn::apply_rotary_pos_emb(x.transpose(1, 2), tables, 1)));
  CHECK_THROWS_AS(nn::apply_rope_fp32(x, torch::zeros({1, 4}, torch::kInt64)), util::DataError);
}

TEST_CASE("eager_fp32_scores attention (SmolVLA's) gives a fully masked query row a uniform softmax, not NaN") {
  auto q = torch::randn({2, 4, 6, 8}), k = torch::randn({2, 4, 3, 8}), v = torch::randn({2, 4, 3, 8});
  auto mask = torch::ones({2, 4, 4}, torch::kBool);
  mask.index_put_({0, 1}, false);  // batch 0, query 1 sees no key
  auto out = nn::attend(q, k, v, mask, {.kernel = nn::AttentionKernel::eager_fp32_scores});
  CHECK_FALSE(out.isnan().any().item<bool>());
  // Uniform weights: the mean of the values over the keys, kv head h/2 for query head h.
  auto mean_v = v[0].mean(0).repeat_interleave(2, 0).reshape({-1});
  CHECK(max_diff(out[0][1], mean_v) < 1e-6);
  // PyTorch's SDPA gives 0 on that row instead: the kernels differ exactly there.
  auto sdpa = nn::attend(q, k, v, mask, {.kernel = nn::AttentionKernel::sdpa});
  CHECK(sdpa[0][1].abs().max().item<double>() == 0.0);
  CHECK_THROWS_WITH_AS(
      nn::attend(q, k, v, mask.to(torch::kFloat32), {.kernel = nn::AttentionKernel::eager_fp32_scores}),
      doctest::Contains("boolean"), util::DataError);
}

TEST_CASE("SDPA, transformers-eager and eager_fp32_scores attention agree in fp32 without fully masked rows") {
  torch::manual_seed(3);
  const int64_t batch = 3, length = 7;
  auto q = torch::randn({batch, length, 6, 16}), k = torch::randn({batch, length, 2, 16}),
       v = torch::randn({batch, length, 2, 16});
  auto mask = mixed_mask(batch, length);
  auto sdpa = nn::attend(q, k, v, mask, {.kernel = nn::AttentionKernel::sdpa});
  CHECK(sdpa.sizes() == torch::IntArrayRef({batch, length, 6 * 16}));
  CHECK(max_diff(sdpa, nn::attend(q, k, v, mask, {.kernel = nn::AttentionKernel::eager_fp32_scores})) < 1e-6);
  CHECK(max_diff(sdpa, nn::attend(q, k, v, mask, {.kernel = nn::AttentionKernel::eager})) < 1e-6);
  // 4-D masks and additive masks mean the same.
  auto additive = torch::zeros({batch, 1, length, length}).masked_fill(mask.unsqueeze(1).logical_not(), -1e30);
  CHECK(max_diff(sdpa, nn::attend(q, k, v, additive, {.kernel = nn::AttentionKernel::sdpa})) < 1e-6);
  // Without a mask, causal: SDPA's enable_gqa path equals the repeated-heads path with a causal mask.
  auto causal = torch::ones({length, length}, torch::kBool).tril().expand({batch, length, length});
  CHECK(max_diff(nn::attend(q, k, v, {}, {.kernel = nn::AttentionKernel::sdpa, .causal = true}),
                 nn::attend(q, k, v, causal, {.kernel = nn::AttentionKernel::sdpa})) < 1e-6);
  CHECK(max_diff(nn::attend(q, k, v, {}, {.kernel = nn::AttentionKernel::eager_fp32_scores, .causal = true}),
                 nn::attend(q, k, v, causal, {.kernel = nn::AttentionKernel::sdpa})) < 1e-6);
  CHECK_THROWS_WITH_AS(nn::attend(q, k, v, torch::ones({batch, length, length + 1}, torch::kBool)),
                       doctest::Contains("mask of shape [3, 7, 8] does not fit"), util::DataError);
  CHECK_THROWS_WITH_AS(nn::attend(q, torch::randn({batch, length, 4, 16}), torch::randn({batch, length, 4, 16}), mask),
                       doctest::Contains("multiple of key/value heads"), util::DataError);
}

TEST_CASE("a decoder layer runs both attention paths alike in fp32 and runs in bf16") {
  torch::manual_seed(5);
  nn::LlamaModel model(tiny_llama_config());
  nn::init_llama_weights(*model, 0.2);
  torch::NoGradGuard no_grad;
  auto x = torch::randn({3, 7, 32});
  auto positions = torch::tensor({{0, 1, 2, 3, 4, 5, 6}, {4, 5, 9, 10, 11, 11, 11}, {90, 91, 92, 300, 301, 302, 900}});
  auto mask = mixed_mask(3, 7);
  auto sdpa = model->forward(x, positions, mask, {.kernel = nn::AttentionKernel::sdpa});
  auto eager = model->forward(x, positions, mask, {.kernel = nn::AttentionKernel::eager_fp32_scores});
  CHECK(max_diff(sdpa, eager) < 1e-5);
  model->to(torch::kBFloat16);
  auto bf16 = model->forward(x.to(torch::kBFloat16), positions, mask);
  CHECK((bf16.scalar_type() == torch::kBFloat16));
  CHECK(max_diff(bf16, sdpa) < 0.1 * sdpa.abs().max().item<double>());
}

TEST_CASE("llama config: text_config of a VLM, both RoPE spellings, and errors naming the key") {
  test::TempDir dir("llama_config");
  const auto file = dir / "config.json";
  write_text(file, R"({"model_type": "smolvlm", "text_config": {"model_type": "llama", "hidden_size": 960,
    "intermediate_size": 2560, "num_hidden_layers": 32, "num_attention_heads": 15, "num_key_value_heads": 5,
    "head_dim": 64, "rms_norm_eps": 1e-5, "rope_theta": 100000, "vocab_size": 49280, "torch_dtype": "bfloat16"}})");
  auto c = nn::read_llama_text_config(file);
  CHECK(c.hidden_size == 960);
  CHECK(c.num_key_value_groups() == 3);
  CHECK(c.rope_theta == 100000);
  CHECK(c.rms_norm_eps == 1e-5);
  CHECK_FALSE(c.attention_bias);

  auto parse = [](const std::string& text) {
    return nn::llama_config_from_json(nlohmann::json::parse(text), "cfg: text_config");
  };
  CHECK(parse(R"({"rope_parameters": {"rope_type": "default", "rope_theta": 500.0}})").rope_theta == 500);
  CHECK(parse(R"({"hidden_size": 64, "num_attention_heads": 4})").head_dim == 16);  // transformers' default
  CHECK(parse(R"({"num_attention_heads": 4})").num_key_value_heads == 4);
  CHECK_THROWS_WITH_AS(parse(R"({"rope_parameters": {"rope_type": "linear", "rope_theta": 1e4, "factor": 2}})"),
                       doctest::Contains("cfg: text_config: 'rope_parameters' has rope_type 'linear'"),
                       util::ConfigError);
  CHECK_THROWS_WITH_AS(parse(R"({"rope_scaling": {"type": "dynamic", "factor": 2}})"),
                       doctest::Contains("'rope_scaling' has rope_type 'dynamic'"), util::ConfigError);
  CHECK_THROWS_WITH_AS(parse(R"({"hidden_size": "960"})"),
                       doctest::Contains("cfg: text_config: 'hidden_size' must be an integer"), util::ConfigError);
  CHECK_THROWS_WITH_AS(parse(R"({"num_attention_heads": 15, "num_key_value_heads": 4, "head_dim": 64})"),
                       doctest::Contains("'num_attention_heads' (15) must be a multiple of 'num_key_value_heads' (4)"),
                       util::ConfigError);
  CHECK_THROWS_WITH_AS(parse(R"({"model_type": "gemma"})"), doctest::Contains("'model_type' must be 'llama'"),
                       util::ConfigError);
  CHECK_THROWS_WITH_AS(parse(R"({"rope_parameters": {"rope_theta": -1}})"),
                       doctest::Contains("rope_parameters: 'rope_theta' must be > 0"), util::ConfigError);
  CHECK_THROWS_WITH_AS(parse(R"({"attention_bias": 1})"), doctest::Contains("'attention_bias' must be true or false"),
                       util::ConfigError);

  write_text(file, R"({"model_type": "smolvlm", "vision_config": {}})");
  const std::string no_text_config = file.string() + ": missing 'text_config'";
  CHECK_THROWS_WITH_AS(nn::read_llama_text_config(file), doctest::Contains(no_text_config.c_str()), util::ConfigError);
  write_text(file, R"({"model_type": "smolvlm", "text_config": {"head_dim": 7}})");
  CHECK_THROWS_WITH_AS(nn::read_llama_text_config(file), doctest::Contains("text_config: 'head_dim' must be even"),
                       util::ConfigError);
}

TEST_CASE("loading a decoder layer's weights names the file and key of a missing or misshaped tensor") {
  test::TempDir dir("llama_weights");
  nn::LlamaDecoderLayer layer(tiny_llama_config());
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : layer->named_parameters()) tensors.emplace_back("layers.3." + item.key(), item.value() + 1);
  const auto good = dir / "good.safetensors";
  io::write_safetensors(good, tensors);
  nn::LlamaDecoderLayer loaded(tiny_llama_config());
  loaded->to(torch::kBFloat16);
  nn::load_module_weights(*loaded, good, {.prefix = "layers.3."});
  CHECK((loaded->mlp->up_proj->weight.scalar_type() == torch::kBFloat16));
  CHECK(max_diff(loaded->mlp->up_proj->weight, layer->mlp->up_proj->weight + 1) < 1e-2);

  auto without = tensors;
  without.erase(without.begin() + 5);  // mlp.up_proj.weight
  const auto missing = dir / "missing.safetensors";
  io::write_safetensors(missing, without);
  const std::string missing_message = missing.string() + ": missing weight 'layers.3.mlp.up_proj.weight'";
  CHECK_THROWS_WITH_AS(nn::load_module_weights(*loaded, missing, {.prefix = "layers.3."}),
                       doctest::Contains(missing_message.c_str()), util::DataError);
  auto misshaped = tensors;
  misshaped[1].second = torch::zeros({16, 16});  // k_proj
  const auto wrong = dir / "wrong.safetensors";
  io::write_safetensors(wrong, misshaped);
  const std::string wrong_message = wrong.string() + ": weight 'layers.3.self_attn.k_proj.weight' has shape [16, 16]";
  CHECK_THROWS_WITH_AS(nn::load_module_weights(*loaded, wrong, {.prefix = "layers.3."}),
                       doctest::Contains(wrong_message.c_str()), util::DataError);
}
