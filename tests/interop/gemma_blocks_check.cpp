// Interop check of lrhost's Gemma / PaliGemma blocks (host/nn/gemma_*, paligemma_*) against LeRobot
// 0.6.1's PiGemma and transformers 5.5.4: reads what gemma_blocks_oracle.py wrote, loads the fp32 and
// the mixed bf16/fp32 weight files under LeRobot's keys with lrhost's strict loader, recomputes every
// reference and prints max |difference| per item. Exits 1 when an item is outside its tolerance or a
// broken weight file is not rejected with a message naming the file and the key.
//
// Tolerances: fp32 1e-5 absolute (1e-5 relative to the largest magnitude when the default oneDNN
// reordered-weight Linear path runs, host/nn/linear.hpp). bf16: kBf16Ulps ulps of bf16 (2^-7
// relative) at the reference's largest magnitude — the same ops in the same dtypes on both sides, so
// only a last-bit difference in one rounding (a reduction order) can move later bf16 roundings.
//
//   lrhost_gemma_blocks_check ORACLE_DIR
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/nn/gemma_model.hpp"
#include "host/nn/linear.hpp"
#include "host/nn/module_weights.hpp"
#include "host/nn/paligemma_model.hpp"
#include "host/util/error.hpp"

namespace fs = std::filesystem;
using namespace lrhost;

namespace {

const std::string kPaliGemmaPrefix = "model.paligemma_with_expert.paligemma.model.";
const std::string kExpertPrefix = "model.paligemma_with_expert.gemma_expert.model.";
constexpr double kBf16Ulps = 2.0;

int failures = 0;

void report(const std::string& name, const torch::Tensor& actual, const torch::Tensor& expected) {
  if (actual.sizes() != expected.sizes() || actual.scalar_type() != expected.scalar_type()) {
    std::printf("FAIL %-28s %s %s, expected %s %s\n", name.c_str(), c10::toString(actual.scalar_type()),
                c10::str(actual.sizes()).c_str(), c10::toString(expected.scalar_type()),
                c10::str(expected.sizes()).c_str());
    ++failures;
    return;
  }
  const bool bf16 = expected.scalar_type() == torch::kBFloat16;
  const auto a = actual.to(torch::kFloat64), e = expected.to(torch::kFloat64);
  const double diff = (a - e).abs().max().item<double>();
  const double scale = e.abs().max().item<double>();
  const double tolerance =
      bf16 ? kBf16Ulps * std::ldexp(scale, -7) : (nn::cpu_packed_linear_enabled() ? 1e-5 * std::max(1.0, scale) : 1e-5);
  const bool ok = diff <= tolerance && !a.isnan().any().item<bool>();
  std::printf("%s %-28s max|diff| %.3g (tolerance %.3g, max|ref| %.3g)\n", ok ? "ok  " : "FAIL", name.c_str(), diff,
              tolerance, scale);
  if (!ok) ++failures;
}

struct Models {
  nn::PaliGemmaModel paligemma{nullptr};
  nn::GemmaModel expert{nullptr};
};

// bf16: convert with to_lerobot_bfloat16() after loading; check_dtypes: the file must hold exactly the
// dtypes that split gives (the mixed file LeRobot writes in bf16 mode).
Models load(const fs::path& dir, const fs::path& weights, bool bf16, bool check_dtypes) {
  const auto config = nn::read_paligemma_config(dir / "config.json");
  const auto expert_json = nlohmann::json::parse(io::read_json_file(dir / "expert_config.json", {}).dump());
  const auto expert_config = nn::gemma_config_from_json(expert_json, (dir / "expert_config.json").string());
  Models m{nn::PaliGemmaModel(config), nn::GemmaModel(expert_config, /*with_embeddings=*/false)};
  const auto content = io::read_safetensors(weights);
  nn::load_module_weights(*m.paligemma, content, weights.string(), {.prefix = kPaliGemmaPrefix});
  nn::load_module_weights(*m.expert, content, weights.string(), {.prefix = kExpertPrefix});
  if (bf16) {
    m.paligemma->to_lerobot_bfloat16();
    m.expert->to_lerobot_bfloat16();
  }
  if (check_dtypes) {
    std::map<std::string, c10::ScalarType> mine;
    for (const auto& p : m.paligemma->named_parameters()) mine[kPaliGemmaPrefix + p.key()] = p.value().scalar_type();
    for (const auto& p : m.expert->named_parameters()) mine[kExpertPrefix + p.key()] = p.value().scalar_type();
    std::size_t compared = 0;
    for (const auto& [key, tensor] : content.tensors) {
      auto it = mine.find(key);
      if (it == mine.end()) continue;  // the dead lm_heads
      ++compared;
      if (it->second != tensor.scalar_type()) {
        std::printf("FAIL dtype of %s: %s, file %s\n", key.c_str(), c10::toString(it->second),
                    c10::toString(tensor.scalar_type()));
        ++failures;
      }
    }
    std::printf("%s dtypes of %zu loaded tensors match the file's bf16/fp32 split\n",
                compared == mine.size() ? "ok  " : "FAIL", compared);
    if (compared != mine.size()) ++failures;
  }
  return m;
}

void check(Models& m, const io::SafetensorsContent& ref, const std::string& p, c10::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  // Fresh copies: a tensor read from the file may sit at an unaligned address, and MKL's GEMM rounds
  // differently on unaligned inputs (an ulp), which Python's freshly allocated inputs never see.
  auto r = [&](const std::string& key) { return ref.at(key).clone(); };
  auto& lm = m.paligemma->language_model;
  auto& ex = m.expert;
  const auto mask = r("mask"), positions = r("positions"), cond = r("cond");
  report(p + "embed", lm->embed(r("ids")), r(p + "embed"));
  if (dtype == torch::kFloat32) {
    report("vision_hidden", m.paligemma->vision_tower->forward(r("pixels")), r("vision_hidden"));
    report("image_features", m.paligemma->embed_image(r("pixels")), r("image_features"));
  }
  report(p + "inv_freq", lm->rotary_emb().inv_freq(), r(p + "inv_freq"));
  const auto rope = lm->rope_tables(positions, dtype);
  report(p + "rope_cos", rope.cos, r(p + "rope_cos"));
  report(p + "rope_sin", rope.sin, r(p + "rope_sin"));
  const auto x_vlm = r("x_vlm").to(dtype), x_expert = r("x_expert").to(dtype);
  report(p + "norm_plain", lm->layer(0)->input_layernorm->forward(x_vlm), r(p + "norm_plain"));
  const auto ada = ex->layer(0)->input_layernorm->forward_with_gate(x_expert, cond);
  report(p + "norm_ada", ada.hidden, r(p + "norm_ada"));
  report(p + "norm_ada_gate", ada.gate, r(p + "norm_ada_gate"));
  report(p + "vlm_layer0", lm->layer(0)->forward(x_vlm, rope, mask), r(p + "vlm_layer0"));
  report(p + "expert_layer0", ex->layer(0)->forward(x_expert, ex->rope_tables(positions, dtype), mask, cond),
         r(p + "expert_layer0"));
  report(p + "vlm_model", lm->forward(r("x_vlm"), positions, mask), r(p + "vlm_model"));
  report(p + "expert_model", ex->forward(r("x_expert"), positions, mask, cond), r(p + "expert_model"));

  // pi05's joint layer pair: both streams' q/k/v concatenated, one attention, split back.
  auto prefix = r("prefix").to(dtype), suffix = r("suffix").to(dtype);
  const int64_t prefix_len = prefix.size(1), suffix_len = suffix.size(1);
  for (std::size_t i = 0; i < 2; ++i) {
    auto vlm_layer = lm->layer(i);
    auto expert_layer = ex->layer(i);
    auto a = vlm_layer->begin(prefix);
    auto b = expert_layer->begin(suffix, cond);
    auto attended = nn::gemma_attend(torch::cat({a.qkv.query, b.qkv.query}, 1), torch::cat({a.qkv.key, b.qkv.key}, 1),
                                     torch::cat({a.qkv.value, b.qkv.value}, 1),
                                     lm->rope_tables(positions, a.qkv.query.scalar_type()), mask);
    prefix = vlm_layer->finish(prefix, attended.narrow(1, 0, prefix_len), a.gate);
    suffix = expert_layer->finish(suffix, attended.narrow(1, prefix_len, suffix_len), b.gate, cond);
    report(p + "joint" + std::to_string(i) + "_prefix", prefix, r(p + "joint" + std::to_string(i) + "_prefix"));
    report(p + "joint" + std::to_string(i) + "_suffix", suffix, r(p + "joint" + std::to_string(i) + "_suffix"));
  }
}

void expect_load_error(const std::string& what, const io::SafetensorsContent& content, const std::string& file,
                       const nn::PaliGemmaConfig& config, const std::string& expected_key) {
  nn::PaliGemmaModel model(config);
  try {
    nn::load_module_weights(*model, content, file, {.prefix = kPaliGemmaPrefix});
  } catch (const util::DataError& error) {
    const std::string message = error.what();
    const bool ok = message.find(file) != std::string::npos && message.find(expected_key) != std::string::npos;
    std::printf("%s load error (%s): %s\n", ok ? "ok  " : "FAIL", what.c_str(), message.c_str());
    if (!ok) ++failures;
    return;
  }
  std::printf("FAIL load error (%s): no error\n", what.c_str());
  ++failures;
}

void check_errors(const fs::path& dir) {
  const auto config = nn::read_paligemma_config(dir / "config.json");
  const auto file = (dir / "model.safetensors").string();
  const auto good = io::read_safetensors(dir / "model.safetensors");
  const std::string norm_key = kPaliGemmaPrefix + "language_model.layers.1.post_attention_layernorm.weight";
  auto missing = good;
  std::erase_if(missing.tensors, [&](const auto& item) { return item.first == norm_key; });
  expect_load_error("missing key", missing, file, config, norm_key);
  const std::string k_key = kPaliGemmaPrefix + "language_model.layers.0.self_attn.k_proj.weight";
  auto misshaped = good;
  for (auto& [key, tensor] : misshaped.tensors)
    if (key == k_key) tensor = torch::zeros({32, 64});
  expect_load_error("wrong shape", misshaped, file, config, k_key);
  const std::string extra_key = kPaliGemmaPrefix + "language_model.layers.0.input_layernorm.dense.weight";
  auto extra = good;
  extra.tensors.emplace_back(extra_key, torch::zeros({192, 64}));
  expect_load_error("unexpected key", extra, file, config, extra_key);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: lrhost_gemma_blocks_check ORACLE_DIR\n");
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    const auto ref = io::read_safetensors(dir / "reference.safetensors");
    std::printf("== fp32 (model.safetensors)\n");
    auto fp32 = load(dir, dir / "model.safetensors", false, false);
    check(fp32, ref, "", torch::kFloat32);
    std::printf("== bf16 (model_bf16.safetensors, LeRobot's bf16/fp32 split)\n");
    auto bf16 = load(dir, dir / "model_bf16.safetensors", true, true);
    check(bf16, ref, "bf16.", torch::kBFloat16);
    std::printf("== bf16 split from the fp32 file (to_lerobot_bfloat16 after loading fp32)\n");
    auto converted = load(dir, dir / "model.safetensors", true, false);
    check(converted, ref, "bf16.", torch::kBFloat16);
    std::printf("== strict loading errors\n");
    check_errors(dir);
  } catch (const std::exception& error) {
    std::printf("FAIL %s\n", error.what());
    return 1;
  }
  std::printf(failures ? "%d FAILED\n" : "all ok\n", failures);
  return failures ? 1 : 0;
}
