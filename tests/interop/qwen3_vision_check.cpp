// Interop check of lrhost's Qwen3-VL vision tower (host/nn/qwen3_vl_vision) against transformers
// 5.5's Qwen3VLVisionModel: reads what qwen3_vision_oracle.py wrote, loads the weights under
// "visual." with lrhost's strict loader, recomputes the merged image tokens, the DeepStack features
// and the gradients of sum(merged * probe) + Σ sum(deepstack_k * probe_k) with respect to the pixels
// and every parameter. Exits 1 when an item is outside its tolerance.
//
// Tolerances: fp32 on both sides with the same ops (conv, SDPA and matmul reduction orders may
// differ by an ulp): outputs 1e-5 relative to their largest magnitude, gradients 1e-5 absolute +
// 1e-4 relative.
//
//   lrhost_qwen3_vision_check ORACLE_DIR
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/nn/module_weights.hpp"
#include "host/nn/qwen3_vl_vision.hpp"
#include "host/util/error.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
using namespace lrhost;
using interop::check_gradients;
using interop::gradient_excess;
using interop::max_abs;
using interop::report;

int main(int argc, char** argv) {
  return interop::run_check(argc, argv, "lrhost_qwen3_vision_check", [](const fs::path& dir) {
    const auto config = nn::Qwen3VLVisionConfig::from_json(io::read_json_file(dir / "config.json", ""), "config.json");
    nn::Qwen3VLVisionModel model(config);
    nn::load_module_weights(*model, dir / "vision.safetensors", {.prefix = "visual."});
    model->eval();
    const auto in = io::read_safetensors(dir / "inputs.safetensors");
    const auto want = io::read_safetensors(dir / "outputs.safetensors");
    auto pixels = in.at("pixel_values").clone().requires_grad_(true);
    const auto out = model->forward(pixels, in.at("image_grid_thw"));
    report("merged image tokens", max_abs(out.merged - want.at("merged")), 1e-5 * max_abs(want.at("merged")));
    auto objective = (out.merged * in.at("probe.merged")).sum();
    for (std::size_t k = 0; k < out.deepstack.size(); ++k) {
      const auto key = "deepstack." + std::to_string(k);
      report(key, max_abs(out.deepstack[k] - want.at(key)), 1e-5 * max_abs(want.at(key)));
      objective = objective + (out.deepstack[k] * in.at("probe." + key)).sum();
    }
    objective.backward();
    report("grad pixel_values", gradient_excess(pixels.grad(), want.at("grad.pixel_values")), 1e-5);
    check_gradients(*model, want, "grad.", false, false);
  });
}
