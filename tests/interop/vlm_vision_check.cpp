// lrhost's side of the VLM vision interop test (tests/interop/vlm_vision_interop.sh): loads the tiny
// SmolVLM written by vlm_vision_oracle.py (transformers 5.5) into lrhost's SigLIP tower and
// pixel-shuffle connector, runs them on the same pixels in fp32 and bf16, runs resize_with_pad on the
// same images as LeRobot 0.6.1, and compares with the reference outputs. Also checks the parameter
// order against transformers' named_parameters() and that a weight file with one key removed fails
// with a message naming the file and the key.
//
//   lrhost_vlm_vision_check ORACLE_DIR
//
// Prints one line per comparison; exit 1 on any mismatch.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "host/io/safetensors.hpp"
#include "host/nn/image_preprocess.hpp"
#include "host/nn/linear.hpp"
#include "host/nn/module_weights.hpp"
#include "host/nn/pixel_shuffle_connector.hpp"
#include "host/nn/siglip_config.hpp"
#include "host/nn/siglip_vision.hpp"
#include "host/util/error.hpp"

using namespace lrhost;

namespace {

// fp32: 1e-5 absolute when apply_linear runs PyTorch's own at::linear (LRHOST_CPU_PACKED_LINEAR=0;
// both sides then run the same ATen kernels). With the default oneDNN reordered-weight CPU path
// (host/nn/linear.hpp) the GEMMs sum in another order, so the bound is 1e-5 relative to the output's
// largest magnitude (when that exceeds 1): fp32 rounding, about ten ulps at that magnitude.
double fp32_tolerance(double largest) {
  return lrhost::nn::cpu_packed_linear_enabled() ? 1e-5 * std::max(1.0, largest) : 1e-5;
}
// bf16: two units in the last place (bf16 keeps 8 significant bits) of the reference's largest
// magnitude. Both sides round every intermediate to bf16 at the same points with the same kernels; a
// value that lands on a rounding boundary can still round the other way in a kernel with another
// blocking, and the following layers can carry that one step once more.
double bf16_tolerance(const torch::Tensor& reference) {
  const double largest = reference.abs().max().item<double>();
  return largest > 0 ? 2.0 * std::ldexp(1.0, std::ilogb(largest) - 7) : 0.0;
}

int failures = 0;

void compare(const std::string& name, const torch::Tensor& ours, const torch::Tensor& reference, double tolerance) {
  if (ours.sizes() != reference.sizes()) {
    std::printf("FAIL %-26s shape %s, reference %s\n", name.c_str(), c10::str(ours.sizes()).c_str(),
                c10::str(reference.sizes()).c_str());
    ++failures;
    return;
  }
  const auto delta = (ours.to(torch::kFloat64) - reference.to(torch::kFloat64)).abs();
  const double diff = delta.max().item<double>();
  const bool ok = diff <= tolerance;
  std::printf("%s %-26s max abs diff %.3g (tolerance %.3g, reference max abs %.3g), %lld of %lld values differ\n",
              ok ? "ok  " : "FAIL", name.c_str(), diff, tolerance, reference.abs().max().item<double>(),
              static_cast<long long>((delta > 0).sum().item<int64_t>()), static_cast<long long>(delta.numel()));
  if (!ok) ++failures;
}

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw util::IoError(file.string() + ": cannot open");
  return nlohmann::json::parse(in);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: lrhost_vlm_vision_check ORACLE_DIR\n";
    return 2;
  }
  try {
    torch::set_num_threads(1);
    torch::NoGradGuard no_grad;
    const std::filesystem::path dir = argv[1];
    const auto config_json = read_json(dir / "config.json");
    const auto vision_config =
        nn::SiglipVisionConfig::from_json(config_json.at("vision_config"), "config.json: vision_config");
    const int64_t scale_factor = config_json.at("scale_factor").get<int64_t>();
    const int64_t text_hidden = config_json.at("text_config").at("hidden_size").get<int64_t>();
    const auto weights_file = dir / "model.safetensors";
    const auto weights = io::read_safetensors(weights_file);
    const auto io = io::read_safetensors(dir / "io.safetensors");

    nn::SiglipVisionTransformer vision(vision_config);
    nn::PixelShuffleConnector connector(vision_config.hidden_size, text_hidden, scale_factor);
    vision->eval();
    connector->eval();
    // Frozen, as SmolVLA keeps its vision tower (the reordered-weight CPU Linear serves frozen weights).
    for (auto& parameter : vision->parameters()) parameter.set_requires_grad(false);
    for (auto& parameter : connector->parameters()) parameter.set_requires_grad(false);
    nn::load_module_weights(*vision, weights, weights_file.string(), {.prefix = "model.vision_model."});
    nn::load_module_weights(*connector, weights, weights_file.string(), {.prefix = "model.connector."});

    // Parameter order = transformers' named_parameters() (LeRobot's optimizer-state indices rely on it).
    std::vector<std::string> keys;
    for (const auto& row : nn::weight_table(*vision, "model.vision_model.")) keys.push_back(row.key);
    for (const auto& row : nn::weight_table(*connector, "model.connector.")) keys.push_back(row.key);
    const auto reference_keys = read_json(dir / "keys.json").get<std::vector<std::string>>();
    const bool same_keys = keys == reference_keys;
    std::printf("%s parameter keys and order   %zu keys, transformers %zu\n", same_keys ? "ok  " : "FAIL", keys.size(),
                reference_keys.size());
    if (!same_keys) ++failures;

    for (const auto& [tag, dtype] : {std::pair{std::string("fp32"), torch::kFloat32}, {"bf16", torch::kBFloat16}}) {
      vision->to(dtype);
      connector->to(dtype);
      for (const std::string suffix : {"", "_small"}) {
        const auto hidden = vision->forward(io.at("pixels" + suffix).to(dtype));
        const auto tokens = connector->forward(hidden);
        const auto& ref_hidden = io.at(tag + ".vision" + suffix);
        const auto& ref_tokens = io.at(tag + ".connector" + suffix);
        auto tolerance = [&](const torch::Tensor& ref) {
          return dtype == torch::kFloat32 ? fp32_tolerance(ref.abs().max().item<double>()) : bf16_tolerance(ref);
        };
        compare(tag + ".vision" + suffix, hidden, ref_hidden, tolerance(ref_hidden));
        compare(tag + ".connector" + suffix, tokens, ref_tokens, tolerance(ref_tokens));
      }
    }

    for (const std::string name : {"wide", "tall"})
      compare("resize_with_pad." + name, nn::resize_with_pad_signed(io.at("images_" + name), 64, 64),
              io.at("prep_" + name), 1e-5);

    // One key removed: the error names the file and the key.
    auto tensors = weights.tensors;
    const std::string removed = "model.vision_model.encoder.layers.1.mlp.fc1.bias";
    std::erase_if(tensors, [&](const auto& item) { return item.first == removed; });
    const auto broken = dir / "model_missing_key.safetensors";
    io::write_safetensors(broken, tensors);
    std::string message;
    try {
      nn::SiglipVisionTransformer fresh(vision_config);
      nn::load_module_weights(*fresh, broken, {.prefix = "model.vision_model."});
    } catch (const util::DataError& error) {
      message = error.what();
    }
    const bool names_both =
        message.find(broken.string()) != std::string::npos && message.find("'" + removed + "'") != std::string::npos;
    std::printf("%s missing key error         \"%s\"\n", names_both ? "ok  " : "FAIL", message.c_str());
    if (!names_both) ++failures;
  } catch (const std::exception& error) {
    std::cerr << "lrhost_vlm_vision_check: " << util::describe(error) << "\n";
    return 1;
  }
  std::printf("%s\n", failures ? "VLM vision interop: FAILED" : "VLM vision interop: all checks passed");
  return failures ? 1 : 0;
}
