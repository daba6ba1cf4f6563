// Unit tests of the VLA vision blocks in host/nn: SigLIP config reading, the SmolVLM2-500M key/shape
// table (SmolVLA reference, smolvla.md §2), output shapes, transformers' position ids, the pixel-shuffle
// permutation, LeRobot's resize_with_pad, and weight-file errors. Numerical equality with transformers
// is checked by tests/interop/vlm_vision_*.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <map>

#include "host/io/safetensors.hpp"
#include "host/nn/image_preprocess.hpp"
#include "host/nn/module_weights.hpp"
#include "host/nn/pixel_shuffle_connector.hpp"
#include "host/nn/siglip_config.hpp"
#include "host/nn/siglip_vision.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost;

namespace {

// SmolVLM2-500M-Video-Instruct's vision_config as its config.json lists it (the rest are defaults).
const nlohmann::json kSmolVLM2VisionConfig = {
    {"model_type", "smolvlm_vision"}, {"hidden_size", 768},        {"image_size", 512},      {"patch_size", 16},
    {"num_attention_heads", 12},      {"intermediate_size", 3072}, {"num_hidden_layers", 12}};

nn::SiglipVisionConfig tiny_vision_config() {
  nn::SiglipVisionConfig c;
  c.hidden_size = 16;
  c.intermediate_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.image_size = 32;
  c.patch_size = 8;
  return c;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

}  // namespace

TEST_CASE("SigLIP config: transformers' defaults per model_type, and errors naming the key") {
  auto c = nn::SiglipVisionConfig::from_json({{"hidden_size", 768},
                                              {"image_size", 512},
                                              {"patch_size", 16},
                                              {"num_attention_heads", 12},
                                              {"architectures", nullptr}},
                                             "config.json: vision_config");
  CHECK(c.hidden_size == 768);
  CHECK(c.intermediate_size == 3072);
  CHECK(c.num_hidden_layers == 12);
  CHECK(c.num_channels == 3);
  CHECK(c.layer_norm_eps == doctest::Approx(1e-6));
  CHECK(c.hidden_act == "gelu_pytorch_tanh");
  CHECK(c.num_patches() == 1024);
  CHECK(c.head_dim() == 64);
  // SmolVLMVisionConfig's own defaults vs SiglipVisionConfig's.
  auto smol = nn::SiglipVisionConfig::from_json(nlohmann::json::object(), "v");
  CHECK(smol.hidden_size == 1152);
  CHECK(smol.patch_size == 32);
  auto siglip = nn::SiglipVisionConfig::from_json({{"model_type", "siglip_vision_model"}}, "v");
  CHECK(siglip.hidden_size == 768);
  CHECK(siglip.patch_size == 16);

  CHECK_THROWS_WITH_AS(nn::SiglipVisionConfig::from_json({{"hidden_size", "768"}}, "config.json: vision_config"),
                       doctest::Contains("config.json: vision_config: 'hidden_size' must be an integer"),
                       util::ConfigError);
  CHECK_THROWS_WITH_AS(nn::SiglipVisionConfig::from_json({{"hidden_size", 100}, {"num_attention_heads", 12}}, "v"),
                       doctest::Contains("'hidden_size' (100) must be divisible by 'num_attention_heads' (12)"),
                       util::ConfigError);
  CHECK_THROWS_WITH_AS(nn::SiglipVisionConfig::from_json({{"hidden_act", "relu"}}, "v"),
                       doctest::Contains("'hidden_act' must be 'gelu_pytorch_tanh' or 'gelu', got 'relu'"),
                       util::ConfigError);
  CHECK_THROWS_WITH_AS(nn::SiglipVisionConfig::from_json({{"model_type", "clip_vision_model"}}, "v"),
                       doctest::Contains("'model_type' must be one of"), util::ConfigError);
  CHECK_THROWS_WITH_AS(nn::SiglipVisionConfig::from_json({{"patch_size", 0}}, "v"),
                       doctest::Contains("'patch_size' must be a positive integer"), util::ConfigError);
  CHECK_THROWS_AS(nn::SiglipVisionConfig::from_json({{"image_size", {512, 512}}}, "v"), util::NotImplemented);
  CHECK_THROWS_AS(nn::SiglipVisionConfig::from_json(nlohmann::json::array(), "v"), util::ConfigError);
}

TEST_CASE("SmolVLM2-500M vision tower and connector: every key and shape of the SmolVLA checkpoint") {
  const auto config = nn::SiglipVisionConfig::from_json(kSmolVLM2VisionConfig, "vision_config");
  nn::SiglipVisionTransformer vision(config);
  nn::PixelShuffleConnector connector(config.hidden_size, /*text_hidden=*/960, /*scale_factor=*/4);
  const auto rows = nn::weight_table(*vision, "model.vision_model.");
  std::map<std::string, std::vector<int64_t>> shapes;
  int64_t total = 0;
  for (const auto& row : rows) {
    shapes[row.key] = row.shape;
    total += numel(row.shape);
  }
  CHECK(rows.size() == 2 + 1 + 12 * 16 + 2);
  CHECK(shapes.size() == rows.size());
  CHECK(total == 86'433'024);  // smolvla.md §2: vision total
  using Shape = std::vector<int64_t>;
  const std::string V = "model.vision_model.";
  CHECK(shapes.at(V + "embeddings.patch_embedding.weight") == Shape{768, 3, 16, 16});
  CHECK(shapes.at(V + "embeddings.patch_embedding.bias") == Shape{768});
  CHECK(shapes.at(V + "embeddings.position_embedding.weight") == Shape{1024, 768});
  const std::string L0 = V + "encoder.layers.0.";
  for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
    CHECK(shapes.at(L0 + "self_attn." + proj + ".weight") == Shape{768, 768});
    CHECK(shapes.at(L0 + "self_attn." + proj + ".bias") == Shape{768});
  }
  for (const char* norm : {"layer_norm1", "layer_norm2"}) {
    CHECK(shapes.at(L0 + norm + ".weight") == Shape{768});
    CHECK(shapes.at(L0 + norm + ".bias") == Shape{768});
  }
  CHECK(shapes.at(L0 + "mlp.fc1.weight") == Shape{3072, 768});
  CHECK(shapes.at(L0 + "mlp.fc1.bias") == Shape{3072});
  CHECK(shapes.at(L0 + "mlp.fc2.weight") == Shape{768, 3072});
  CHECK(shapes.at(L0 + "mlp.fc2.bias") == Shape{768});
  CHECK(shapes.count(V + "encoder.layers.11.mlp.fc2.bias") == 1);
  CHECK(shapes.count(V + "encoder.layers.12.mlp.fc2.bias") == 0);
  CHECK(shapes.at(V + "post_layernorm.weight") == Shape{768});
  CHECK(shapes.at(V + "post_layernorm.bias") == Shape{768});
  // transformers' registration order inside a layer (named_parameters order = LeRobot optimizer indices).
  std::vector<std::string> layer0;
  for (const auto& row : rows)
    if (row.key.rfind(L0, 0) == 0) layer0.push_back(row.key.substr(L0.size()));
  CHECK(layer0 == std::vector<std::string>{"self_attn.k_proj.weight", "self_attn.k_proj.bias",
                                           "self_attn.v_proj.weight", "self_attn.v_proj.bias",
                                           "self_attn.q_proj.weight", "self_attn.q_proj.bias",
                                           "self_attn.out_proj.weight", "self_attn.out_proj.bias", "layer_norm1.weight",
                                           "layer_norm1.bias", "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight",
                                           "mlp.fc2.bias", "layer_norm2.weight", "layer_norm2.bias"});

  const auto connector_rows = nn::weight_table(*connector, "model.connector.");
  REQUIRE(connector_rows.size() == 1);
  CHECK(connector_rows[0].key == "model.connector.modality_projection.proj.weight");
  CHECK(connector_rows[0].shape == Shape{960, 12288});
  CHECK(numel(connector_rows[0].shape) == 11'796'480);
}

TEST_CASE("full-size geometry: (B, 3, 512, 512) -> (B, 1024, 768) -> (B, 64, 960)") {
  // The SmolVLM2 geometry with one encoder layer and a narrow MLP, to keep the test fast.
  auto config = nn::SiglipVisionConfig::from_json(kSmolVLM2VisionConfig, "vision_config");
  config.num_hidden_layers = 1;
  config.intermediate_size = 64;
  nn::SiglipVisionTransformer vision(config);
  nn::PixelShuffleConnector connector(768, 960, 4);
  vision->eval();
  torch::NoGradGuard no_grad;
  const auto pixels = torch::rand({2, 3, 512, 512}) * 2 - 1;
  const auto hidden = vision->forward(pixels);
  CHECK(hidden.sizes() == c10::IntArrayRef{2, 1024, 768});
  const auto tokens = connector->forward(hidden);
  CHECK(tokens.sizes() == c10::IntArrayRef{2, 64, 960});
  CHECK(torch::isfinite(tokens).all().item<bool>());
  // bf16 modules take fp32 pixels (cast like SmolVLA's embed_image) and return bf16.
  vision->to(torch::kBFloat16);
  CHECK((vision->forward(pixels.narrow(0, 0, 1)).scalar_type() == torch::kBFloat16));
}

TEST_CASE("position ids: transformers' bucketize rule is arange at the configured size, fp32 and bf16") {
  auto config = nn::SiglipVisionConfig::from_json(kSmolVLM2VisionConfig, "vision_config");
  config.num_hidden_layers = 0;
  nn::SiglipVisionEmbeddings embeddings(config);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    CHECK(torch::equal(embeddings->position_ids(32, 32, dtype, torch::kCPU), torch::arange(1024)));
  }
  // A half-size image spreads its 16x16 grid over the 32x32 table: row i, column j -> (2i)·32 + 2j.
  const auto half = embeddings->position_ids(16, 16, torch::kFloat32, torch::kCPU).view({16, 16});
  CHECK(half[0][1].item<int64_t>() == 2);
  CHECK(half[1][0].item<int64_t>() == 64);
  CHECK(half[15][15].item<int64_t>() == 30 * 32 + 30);
}

TEST_CASE("pixel shuffle: token k covers patch rows s·(k / (n/s)).. and columns s·(k % (n/s)).., row-major") {
  for (int64_t scale : {2, 4}) {
    const int64_t side = 32, dim = 3, reduced = side / scale;
    // Feature d of patch (r, c) holds r·1000 + c·10 + d.
    auto r = torch::arange(side).view({side, 1, 1});
    auto c = torch::arange(side).view({1, side, 1});
    auto d = torch::arange(dim).view({1, 1, dim});
    auto x = (r * 1000 + c * 10 + d).reshape({1, side * side, dim}).to(torch::kFloat64);
    auto y = nn::pixel_shuffle_tokens(x, scale);
    REQUIRE(y.sizes() == c10::IntArrayRef{1, side * side / (scale * scale), dim * scale * scale});
    bool all_match = true;
    for (int64_t k = 0; k < y.size(1); ++k)
      for (int64_t dr = 0; dr < scale; ++dr)
        for (int64_t dc = 0; dc < scale; ++dc)
          for (int64_t f = 0; f < dim; ++f) {
            const int64_t row = scale * (k / reduced) + dr, col = scale * (k % reduced) + dc;
            const double expected = static_cast<double>(row * 1000 + col * 10 + f);
            if (y[0][k][(dr * scale + dc) * dim + f].item<double>() != expected) all_match = false;
          }
    CHECK_MESSAGE(all_match, "scale " << scale);
  }
  CHECK_THROWS_WITH_AS(nn::pixel_shuffle_tokens(torch::zeros({1, 12, 4}), 2), doctest::Contains("not a square grid"),
                       util::Error);
  CHECK_THROWS_WITH_AS(nn::pixel_shuffle_tokens(torch::zeros({1, 36, 4}), 4), doctest::Contains("scale factor 4"),
                       util::Error);
}

TEST_CASE("resize_with_pad: LeRobot's sizes, top-left padding, bilinear without antialias") {
  // 480x640 -> 384x512 image under 128 rows of padding; after x*2-1 the padding is -1.
  auto grey = torch::full({2, 3, 480, 640}, 0.5);
  auto out = nn::resize_with_pad_signed(grey, 512, 512);
  REQUIRE(out.sizes() == c10::IntArrayRef{2, 3, 512, 512});
  CHECK(torch::equal(out.narrow(2, 0, 128), torch::full({2, 3, 128, 512}, -1.0)));
  CHECK(torch::allclose(out.narrow(2, 128, 384), torch::zeros({2, 3, 384, 512})));
  // Portrait: padding goes to the left columns.
  auto portrait = nn::resize_with_pad(torch::ones({1, 1, 64, 32}), 32, 32, 0.0);
  CHECK(torch::equal(portrait.narrow(3, 0, 16), torch::zeros({1, 1, 32, 16})));
  CHECK(torch::equal(portrait.narrow(3, 16, 16), torch::ones({1, 1, 32, 16})));
  // Upsampling [0, 1] (1x2) into a 2x4 box: half-pixel centres, edge-clamped: 0, .25, .75, 1 per row.
  auto up = nn::resize_with_pad(torch::tensor({0.0f, 1.0f}).view({1, 1, 1, 2}), 2, 4, 0.0);
  CHECK(torch::allclose(up, torch::tensor({0.0f, 0.25f, 0.75f, 1.0f}).view({1, 1, 1, 4}).expand({1, 1, 2, 4})));
  // int() truncation: 3x7 into 5x5 -> ratio 1.4, 2x5 (2.14 truncated), 3 rows of padding.
  auto odd = nn::resize_with_pad(torch::ones({1, 1, 3, 7}), 5, 5, -2.0);
  CHECK(torch::equal(odd.narrow(2, 0, 3), torch::full({1, 1, 3, 5}, -2.0f)));
  CHECK(torch::allclose(odd.narrow(2, 3, 2), torch::ones({1, 1, 2, 5})));
  // Already the target size: returned as is.
  auto same = torch::rand({1, 3, 8, 8});
  CHECK(nn::resize_with_pad(same, 8, 8, 0.0).is_same(same));
  CHECK_THROWS_WITH_AS(nn::resize_with_pad(torch::zeros({3, 8, 8}), 4, 4, 0), doctest::Contains("(B, C, H, W)"),
                       util::Error);
  CHECK_THROWS_WITH_AS(nn::resize_with_pad(torch::zeros({1, 3, 8, 8}, torch::kUInt8), 4, 4, 0),
                       doctest::Contains("expected float images"), util::Error);
}

TEST_CASE("weight files: a missing or misshaped key names the file and the key; dtypes convert") {
  test::TempDir dir("siglip");
  nn::SiglipVisionTransformer source(tiny_vision_config());
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : source->named_parameters())
    tensors.emplace_back("model.vision_model." + item.key(), item.value().detach().to(torch::kBFloat16));
  tensors.emplace_back("model.connector.modality_projection.proj.weight", torch::randn({24, 16 * 4}));
  const auto good = dir / "good.safetensors";
  io::write_safetensors(good, tensors);

  // bf16 file into an fp32 module, and the connector from the same file under its own prefix.
  nn::SiglipVisionTransformer loaded(tiny_vision_config());
  nn::load_module_weights(*loaded, good, {.prefix = "model.vision_model."});
  CHECK(torch::equal(loaded->encoder->layers->ptr<nn::SiglipEncoderLayerImpl>(1)->mlp->fc2->weight,
                     tensors[3 + 16 + 12].second.to(torch::kFloat32)));
  nn::PixelShuffleConnector connector(16, 24, 2);
  nn::load_module_weights(*connector, good, {.prefix = "model.connector."});
  CHECK(torch::equal(connector->modality_projection->proj->weight, tensors.back().second));

  auto missing = tensors;
  missing.erase(missing.begin() + 5);  // encoder.layers.0.self_attn.v_proj.weight
  io::write_safetensors(dir / "missing.safetensors", missing);
  CHECK_THROWS_WITH_AS(
      nn::load_module_weights(*loaded, dir / "missing.safetensors", {.prefix = "model.vision_model."}),
      doctest::Contains(
          "missing.safetensors: missing weight 'model.vision_model.encoder.layers.0.self_attn.v_proj.weight'"),
      util::DataError);
  auto misshaped = tensors;
  misshaped[2].second = torch::zeros({17, 16});  // position_embedding.weight
  io::write_safetensors(dir / "misshaped.safetensors", misshaped);
  CHECK_THROWS_WITH_AS(
      nn::load_module_weights(*loaded, dir / "misshaped.safetensors", {.prefix = "model.vision_model."}),
      doctest::Contains("misshaped.safetensors: weight 'model.vision_model.embeddings.position_embedding.weight' "
                        "has shape [17, 16], expected [16, 16]"),
      util::DataError);

  // A bf16 module loads an fp32 file and computes in bf16.
  nn::SiglipVisionTransformer half(tiny_vision_config());
  half->to(torch::kBFloat16);
  nn::load_module_weights(*half, good, {.prefix = "model.vision_model."});
  CHECK((half->post_layernorm->weight.scalar_type() == torch::kBFloat16));
}
