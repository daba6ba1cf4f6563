// Unit tests of the Qwen3-VL parts GR00T's backbone is built from (host/nn/qwen3_vl_*) beyond their
// interop tests: the configs refuse what the port does not build, naming the key; get_rope_index's
// positions for a small prompt by hand; mismatched images and tokens are errors, not crashes.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/nn/qwen3_vl_model.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::nn::Qwen3VLConfig;
using lrhost::nn::Qwen3VLTextConfig;
using lrhost::nn::Qwen3VLVisionConfig;
using nlohmann::json;

namespace {

json text_config() {
  return {{"hidden_size", 16},
          {"intermediate_size", 32},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 2},
          {"num_key_value_heads", 1},
          {"head_dim", 8},
          {"vocab_size", 40},
          {"rope_parameters", {{"rope_type", "default"}, {"mrope_interleaved", true}, {"mrope_section", {2, 1, 1}}}}};
}
json vision_config() {
  return {
      {"depth", 2},      {"hidden_size", 16},     {"intermediate_size", 32},       {"num_heads", 2},
      {"patch_size", 4}, {"out_hidden_size", 16}, {"num_position_embeddings", 16}, {"deepstack_visual_indexes", {0}}};
}
template <class Config>
std::string error_in(json object) {
  return lrhost::test::error_of<lrhost::util::ConfigError>([&] { Config::from_json(object, "text_config"); });
}

}  // namespace

TEST_CASE("qwen3-vl configs: what the port does not build is refused, naming the key") {
  auto with = [](json base, const char* key, json value) {
    base[key] = value;
    return base;
  };
  json rope = text_config();
  rope["rope_parameters"]["rope_type"] = "yarn";
  CHECK(error_in<Qwen3VLTextConfig>(rope).find("rope_type") != std::string::npos);
  rope = text_config();
  rope["rope_parameters"]["mrope_interleaved"] = false;
  CHECK(error_in<Qwen3VLTextConfig>(rope).find("mrope_interleaved") != std::string::npos);
  rope = text_config();
  rope["rope_parameters"]["mrope_section"] = {2, 2};
  CHECK(error_in<Qwen3VLTextConfig>(rope).find("mrope_section") != std::string::npos);
  CHECK(error_in<Qwen3VLTextConfig>(with(text_config(), "hidden_act", "gelu")).find("hidden_act") != std::string::npos);
  CHECK(error_in<Qwen3VLTextConfig>(with(text_config(), "num_key_value_heads", 3)).find("num_key_value_heads") !=
        std::string::npos);
  CHECK(error_in<Qwen3VLVisionConfig>(with(vision_config(), "num_position_embeddings", 15)).find("square") !=
        std::string::npos);
  CHECK(error_in<Qwen3VLVisionConfig>(with(vision_config(), "deepstack_visual_indexes", {2})).find("deepstack") !=
        std::string::npos);
  CHECK(error_in<Qwen3VLVisionConfig>(with(vision_config(), "hidden_act", "silu")).find("hidden_act") !=
        std::string::npos);
  const auto mismatch = lrhost::test::error_of<lrhost::util::ConfigError>([&] {
    Qwen3VLConfig::from_json(
        {{"text_config", text_config()}, {"vision_config", with(vision_config(), "out_hidden_size", 8)}}, "c");
  });
  CHECK(mismatch.find("out_hidden_size") != std::string::npos);
}

TEST_CASE("qwen3-vl rope index: Qwen3-VL's positions by hand, mismatched images are errors") {
  const int image = 5;
  // Row 0: text, a 2x4 merged image (4x8 patches), text. Row 1: two pads, text, the same image.
  const auto ids = torch::tensor({{1, 2, image, image, image, image, image, image, image, image, 3, 4},
                                  {0, 0, 1, image, image, image, image, image, image, image, image, 3}});
  auto mask = torch::ones_like(ids);
  mask[1][0] = 0;
  mask[1][1] = 0;
  const auto grids = torch::tensor({{1, 4, 8}, {1, 4, 8}});
  const auto p = lrhost::nn::qwen3_rope_index(ids, mask, grids, image, 2);
  // Row 0: 0 1 | T=2, H=2+row, W=2+col | next text at 2 + max(2, 4) = 6.
  CHECK(p[0][0].equal(torch::tensor({0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 6, 7})));
  CHECK(p[1][0].equal(torch::tensor({0, 1, 2, 2, 2, 2, 3, 3, 3, 3, 6, 7})));
  CHECK(p[2][0].equal(torch::tensor({0, 1, 2, 3, 4, 5, 2, 3, 4, 5, 6, 7})));
  CHECK(p[0][1].equal(torch::tensor({0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 5})));  // pads stay 0
  CHECK(lrhost::test::error_of<lrhost::util::DataError>([&] {
          lrhost::nn::qwen3_rope_index(ids, mask, grids.narrow(0, 0, 1), image, 2);
        }).find("more images") != std::string::npos);
  CHECK(lrhost::test::error_of<lrhost::util::DataError>([&] {
          lrhost::nn::qwen3_rope_index(ids, mask, torch::tensor({{1, 4, 8}, {1, 4, 8}, {1, 4, 8}}), image, 2);
        }).find("lists 3 images") != std::string::npos);
  CHECK(lrhost::test::error_of<lrhost::util::DataError>([&] {
          lrhost::nn::qwen3_rope_index(ids, mask, torch::tensor({{1, 4, 10}, {1, 4, 8}}), image, 2);
        }).find("<|image_pad|>") != std::string::npos);

  // The backbone: image features that do not match the prompt's image tokens are an error.
  const auto config = Qwen3VLConfig::from_json(
      {{"text_config", text_config()}, {"vision_config", vision_config()}, {"image_token_id", image}}, "c");
  lrhost::nn::Qwen3VLBackbone backbone(config);
  const auto pixels = torch::randn({32, 3 * 2 * 4 * 4});  // one 4x8-patch image, two images in the prompt
  CHECK(lrhost::test::error_of<lrhost::util::DataError>([&] {
          backbone->forward(ids, mask, pixels, grids.narrow(0, 0, 1));
        }).find("do not match") != std::string::npos);
  CHECK(lrhost::test::error_of<lrhost::util::DataError>([&] {
          backbone->forward(ids, mask, pixels.narrow(1, 0, 10), grids.narrow(0, 0, 1));
        }).find("pixel_values must be") != std::string::npos);
}
