// Interop check of lrhost's Qwen3-VL language model (host/nn/qwen3_vl_text) against transformers
// 5.5's Qwen3VLTextModel: reads what qwen3_text_oracle.py wrote, loads the weights under
// "language_model." with lrhost's strict loader, recomputes the last layer's output before the final
// norm (GR00T's tap), the normed output, and the gradients of sum(tap * probe) with respect to the
// inputs and every parameter. Exits 1 when an item is outside its tolerance.
//
// Tolerances: fp32 on both sides with the same ops; SDPA / matmul reduction orders may differ by an
// ulp per op, compounded over 3 layers: outputs 1e-5 relative to their largest magnitude, gradients
// 1e-5 absolute + 1e-4 relative (the bound the GR00T issue sets).
//
//   lrhost_qwen3_text_check ORACLE_DIR
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/nn/module_weights.hpp"
#include "host/nn/qwen3_vl_text.hpp"
#include "host/util/error.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
using namespace lrhost;

using interop::check_gradients;
using interop::gradient_excess;
using interop::max_abs;
using interop::report;

int main(int argc, char** argv) {
  return interop::run_check(argc, argv, "lrhost_qwen3_text_check", [](const fs::path& dir) {
    const auto config = nn::Qwen3VLTextConfig::from_json(io::read_json_file(dir / "config.json", ""), "config.json");
    nn::Qwen3VLTextModel model(config);
    nn::load_module_weights(*model, dir / "text.safetensors", {.prefix = "language_model."});
    model->eval();
    const auto in = io::read_safetensors(dir / "inputs.safetensors");
    const auto want = io::read_safetensors(dir / "outputs.safetensors");
    auto embeds = in.at("inputs_embeds").clone().requires_grad_(true);
    const auto tap = model->run_layers(embeds, in.at("position_ids"), in.at("attention_mask"),
                                       in.at("visual_pos_masks"), {in.at("deepstack.0"), in.at("deepstack.1")});
    report("tap: last layer's output before the norm", max_abs(tap - want.at("tap")), 1e-5 * max_abs(want.at("tap")));
    report("after the final norm", max_abs(model->norm(tap) - want.at("last")), 1e-5 * max_abs(want.at("last")));
    (tap * in.at("probe")).sum().backward();
    report("grad inputs_embeds", gradient_excess(embeds.grad(), want.at("grad.inputs_embeds")), 1e-5);
    check_gradients(*model, want, "grad.", false, true, static_cast<int64_t>(want.tensors.size()) - 3);
  });
}
