// Unit tests of the strict safetensors -> module loader (host/nn/module_weights): values and dtype
// conversion, prefixes, skipped keys, and one error per mistake a weight file can carry.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/io/safetensors.hpp"
#include "host/nn/module_weights.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost;

namespace {
struct Tiny : torch::nn::Module {
  Tiny() {
    proj = register_module("proj", torch::nn::Linear(3, 2));
    register_buffer("scale", torch::ones({2}));
  }
  torch::nn::Linear proj{nullptr};
};

io::SafetensorsContent content_of(std::vector<std::pair<std::string, torch::Tensor>> tensors) {
  return io::SafetensorsContent{std::move(tensors), {}};
}
}  // namespace

TEST_CASE("load_module_weights copies values under a prefix and converts dtypes") {
  Tiny tiny;
  auto w = torch::arange(6, torch::kFloat32).reshape({2, 3});
  auto content = content_of({{"m.proj.weight", w.to(torch::kBFloat16)},
                             {"m.proj.bias", torch::tensor({1.f, 2.f})},
                             {"m.scale", torch::tensor({3.f, 4.f})},
                             {"other.key", torch::zeros({1})}});
  nn::load_module_weights(tiny, content, "w.safetensors", {.prefix = "m."});
  CHECK(torch::equal(tiny.proj->weight, w));
  CHECK((tiny.proj->weight.scalar_type() == torch::kFloat32));
  CHECK(torch::equal(tiny.named_buffers()["scale"], torch::tensor({3.f, 4.f})));
}

TEST_CASE("load_module_weights names the file and key of every mismatch") {
  Tiny tiny;
  auto good = [] {
    return std::vector<std::pair<std::string, torch::Tensor>>{
        {"proj.weight", torch::zeros({2, 3})}, {"proj.bias", torch::zeros({2})}, {"scale", torch::zeros({2})}};
  };
  auto missing = good();
  missing.erase(missing.begin() + 1);
  CHECK_THROWS_WITH_AS(nn::load_module_weights(tiny, content_of(missing), "f.safetensors"),
                       doctest::Contains("f.safetensors: missing weight 'proj.bias'"), util::DataError);
  auto misshaped = good();
  misshaped[0].second = torch::zeros({3, 2});
  CHECK_THROWS_WITH_AS(nn::load_module_weights(tiny, content_of(misshaped), "f.safetensors"),
                       doctest::Contains("weight 'proj.weight' has shape [3, 2], expected [2, 3]"), util::DataError);
  auto extra = good();
  extra.emplace_back("proj.extra", torch::zeros({1}));
  CHECK_THROWS_WITH_AS(nn::load_module_weights(tiny, content_of(extra), "f.safetensors"),
                       doctest::Contains("unexpected weights under '' that the module does not have: 'proj.extra'"),
                       util::DataError);
  CHECK_NOTHROW(nn::load_module_weights(tiny, content_of(extra), "f.safetensors", {.allow_unused_under_prefix = true}));
  CHECK_NOTHROW(nn::load_module_weights(tiny, content_of(good()), "f.safetensors", {.skip = {"proj.bias"}}));
}

TEST_CASE("weight_table lists parameters then buffers with the prefix") {
  Tiny tiny;
  auto rows = nn::weight_table(tiny, "x.");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].key == "x.proj.weight");
  CHECK(rows[0].shape == std::vector<int64_t>{2, 3});
  CHECK(rows[2].key == "x.scale");
}
