// Interop check of lrhost's Llama decoder parts (host/nn/llama_*, rotary_embedding, attention_core)
// against transformers 5.5 and LeRobot 0.6.1's SmolVLA functions: reads what vlm_decoder_oracle.py
// wrote for each case folder, loads the weights with lrhost's strict loader, recomputes every
// reference and prints the max |difference| per item. Exits 1 when any item is outside its
// tolerance (fp32 1e-5 absolute; bf16 see kBf16Ulps) or when a broken weight file is not rejected
// with a message naming the file and the key.
//
//   lrhost_vlm_decoder_check CASE_DIR...
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "host/io/safetensors.hpp"
#include "host/nn/linear.hpp"
#include "host/nn/llama_model.hpp"
#include "host/nn/module_weights.hpp"
#include "host/util/error.hpp"

namespace fs = std::filesystem;
using namespace lrhost;

namespace {

// fp32: 1e-5 absolute when apply_linear runs PyTorch's own at::linear (LRHOST_CPU_PACKED_LINEAR=0;
// both sides then run the same ATen kernels). With the default oneDNN reordered-weight CPU path
// (host/nn/linear.hpp) the GEMMs sum in another order, so the bound is 1e-5 relative to the output's
// largest magnitude (when that exceeds 1): fp32 rounding, about ten ulps at that magnitude.
double fp32_tolerance(double largest) {
  return lrhost::nn::cpu_packed_linear_enabled() ? 1e-5 * std::max(1.0, largest) : 1e-5;
}
// bf16 tolerance in units of one bf16 ulp at the reference's largest magnitude (2^-7 relative):
// the same kernels run on both sides, but a last-bit difference in one rounding (e.g. a reduction
// order) moves later bf16 roundings by whole ulps; two ulps of the largest value bounds that.
constexpr double kBf16Ulps = 2.0;

int failures = 0;

void report(const std::string& name, const torch::Tensor& actual, const torch::Tensor& expected, bool bf16) {
  if (actual.sizes() != expected.sizes()) {
    std::printf("FAIL %-40s shape %s, expected %s\n", name.c_str(), c10::str(actual.sizes()).c_str(),
                c10::str(expected.sizes()).c_str());
    ++failures;
    return;
  }
  const auto a = actual.to(torch::kFloat64), e = expected.to(torch::kFloat64);
  const double diff = (a - e).abs().max().item<double>();
  const double scale = e.abs().max().item<double>();
  const double tolerance = bf16 ? kBf16Ulps * std::ldexp(scale, -7) : fp32_tolerance(scale);
  const bool ok = diff <= tolerance && !a.isnan().any().item<bool>();
  std::printf("%s %-40s max|diff| %.3g (tolerance %.3g, max|ref| %.3g)\n", ok ? "ok  " : "FAIL", name.c_str(), diff,
              tolerance, scale);
  if (!ok) ++failures;
}

void expect_load_error(const std::string& what, nn::LlamaModel& model, const fs::path& file,
                       const std::string& expected_key) {
  try {
    nn::load_module_weights(*model, file, {.prefix = "model.text_model."});
  } catch (const util::DataError& error) {
    const std::string message = error.what();
    const bool ok = message.find(file.string()) != std::string::npos && message.find(expected_key) != std::string::npos;
    std::printf("%s load error (%s): %s\n", ok ? "ok  " : "FAIL", what.c_str(), message.c_str());
    if (!ok) ++failures;
    return;
  }
  std::printf("FAIL load error (%s): no error\n", what.c_str());
  ++failures;
}

void check_case(const fs::path& folder) {
  std::printf("== %s\n", folder.string().c_str());
  const auto config = nn::read_llama_text_config(folder / "config.json");
  const auto ref = io::read_safetensors(folder / "reference.safetensors");
  auto r = [&](const std::string& key) { return ref.at(key); };
  const auto positions = r("positions"), mask = r("mask"), x = r("x");

  // RoPE.
  nn::LlamaRotaryEmbedding rope(config.head_dim, config.rope_theta);
  const auto tables = rope.tables(positions, torch::kFloat32);
  report("rope cos", tables.cos, r("rope_cos"), false);
  report("rope sin", tables.sin, r("rope_sin"), false);
  report("rope q (transformers)", nn::apply_rotary_pos_emb(r("q"), tables), r("q_rot"), false);
  report("rope k (transformers)", nn::apply_rotary_pos_emb(r("k"), tables), r("k_rot"), false);
  report("rope q (transformers, bf16)",
         nn::apply_rotary_pos_emb(r("q").to(torch::kBFloat16), rope.tables(positions, torch::kBFloat16)),
         r("q_rot_bf16"), true);
  report("rope q (smolvla apply_rope)", nn::apply_rope_fp32(r("q"), positions), r("q_smolvla_rope"), false);
  report("rope q (smolvla, config base)", nn::apply_rope_fp32(r("q"), positions, config.rope_theta),
         r("q_smolvla_rope_theta"), false);
  report("rope q (smolvla, bf16)", nn::apply_rope_fp32(r("q").to(torch::kBFloat16), positions),
         r("q_smolvla_rope_bf16"), true);

  // SmolVLA's eager attention.
  const nn::AttentionOptions smolvla{.kernel = nn::AttentionKernel::eager_fp32_scores};
  report("smolvla eager attention", nn::attend(r("q"), r("k"), r("v"), mask, smolvla), r("smolvla_attn"), false);
  report("smolvla eager, fully masked rows", nn::attend(r("q"), r("k"), r("v"), r("fully_masked"), smolvla),
         r("smolvla_attn_fully_masked"), false);
  report(
      "smolvla eager attention (bf16)",
      nn::attend(r("q").to(torch::kBFloat16), r("k").to(torch::kBFloat16), r("v").to(torch::kBFloat16), mask, smolvla),
      r("smolvla_attn_bf16"), true);

  // Decoder layers loaded from the file, both transformers backends, fp32 then bf16.
  nn::LlamaModel model(config);
  model->eval();
  // Frozen, as SmolVLA keeps its VLM layers (the reordered-weight CPU Linear serves frozen weights).
  for (auto& parameter : model->parameters()) parameter.set_requires_grad(false);
  torch::NoGradGuard no_grad;
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const bool bf16 = dtype == torch::kBFloat16;
    const std::string tag = bf16 ? "_bf16" : "";
    model->to(dtype);
    nn::load_module_weights(*model, folder / "model.safetensors", {.prefix = "model.text_model."});
    const auto xd = x.to(dtype);
    const auto layer_rope = model->rotary_emb().tables(positions, dtype);
    for (auto kernel : {nn::AttentionKernel::sdpa, nn::AttentionKernel::eager}) {
      const std::string name = nn::attention_kernel_name(kernel);
      const nn::AttentionOptions options{.kernel = kernel};
      auto h = xd;
      for (std::size_t i = 0; i < model->layers->size(); ++i) {
        h = model->layer(i)->forward(h, layer_rope, mask, options);
        report("layer" + std::to_string(i) + " " + name + tag, h, r("layer" + std::to_string(i) + "_" + name + tag),
               bf16);
      }
      report("model (layers + norm) " + name + tag, model->forward(xd, positions, mask, options),
             r("final_" + name + tag), bf16);
    }
    const nn::AttentionOptions causal{.kernel = nn::AttentionKernel::sdpa, .causal = true};
    report("layer0 sdpa causal, no mask" + tag, model->layer(0)->forward(xd, layer_rope, {}, causal),
           r("layer0_sdpa_causal" + tag), bf16);
    if (bf16) {
      // transformers' model.to(bf16) rounds inv_freq through bf16 (see rotary_embedding.hpp).
      nn::LlamaRotaryEmbedding rounded(config.head_dim, config.rope_theta);
      rounded.round_inv_freq_through(torch::kBFloat16);
      report("layer0 sdpa_bf16, inv_freq via bf16",
             model->layer(0)->forward(xd, rounded.tables(positions, dtype), mask),
             r("layer0_sdpa_bf16_rounded_inv_freq"), true);
    }
  }

  // Broken weight files: a missing key and a misshaped one are rejected, naming file and key.
  auto weights = io::read_safetensors(folder / "model.safetensors");
  const std::string victim = "model.text_model.layers.0.self_attn.k_proj.weight";
  std::vector<std::pair<std::string, torch::Tensor>> missing, misshaped;
  for (const auto& [key, tensor] : weights.tensors) {
    if (key != victim) missing.emplace_back(key, tensor);
    misshaped.emplace_back(key, key == victim ? tensor.t().contiguous() : tensor);
  }
  const auto missing_file = folder / "missing_key.safetensors", misshaped_file = folder / "misshaped_key.safetensors";
  io::write_safetensors(missing_file, missing);
  io::write_safetensors(misshaped_file, misshaped);
  expect_load_error("missing key", model, missing_file, victim);
  expect_load_error("misshaped key", model, misshaped_file, victim);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CASE_DIR...\n", argv[0]);
    return 2;
  }
  try {
    for (int i = 1; i < argc; ++i) check_case(argv[i]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", util::describe(error).c_str());
    return 1;
  }
  std::printf("%s\n", failures ? "FAILED" : "all items within tolerance");
  return failures ? 1 : 0;
}
