// Interop check of lrhost's Qwen3-VL backbone as GR00T N1.7 runs it (host/nn/qwen3_vl_model) against
// transformers 5.5's Qwen3VLModel with LeRobot's Qwen3Backbone layer cut, position ids and hook:
// reads what qwen3_backbone_oracle.py wrote, loads the weights under "model." strictly (the text
// layers cut to select_layer), recomputes the M-RoPE position ids (exact), the last kept layer's
// output and every gradient of sum(tap * probe) (tune_llm and tune_visual: every parameter and the
// pixels). Exits 1 when an item is outside its tolerance.
//
// Tolerances: as the tower and text checks (fp32, same ops): the tap 1e-5 relative to its largest
// magnitude, gradients 1e-5 absolute + 1e-4 relative; position ids bit-equal.
//
//   lrhost_qwen3_backbone_check ORACLE_DIR
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/nn/module_weights.hpp"
#include "host/nn/qwen3_vl_model.hpp"
#include "host/util/error.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
using namespace lrhost;
using interop::check_gradients;
using interop::gradient_excess;
using interop::max_abs;
using interop::report;

int main(int argc, char** argv) {
  return interop::run_check(argc, argv, "lrhost_qwen3_backbone_check", [](const fs::path& dir) {
    const auto json = io::read_json_file(dir / "config.json", "");
    const auto config = nn::Qwen3VLConfig::from_json(json, "config.json");
    nn::Qwen3VLBackbone model(config, json.at("select_layer").get<int64_t>());
    nn::load_module_weights(*model, dir / "backbone.safetensors", {.prefix = "model."});
    model->eval();
    const auto in = io::read_safetensors(dir / "inputs.safetensors");
    const auto want = io::read_safetensors(dir / "outputs.safetensors");
    const auto positions = nn::qwen3_rope_index(in.at("input_ids"), in.at("attention_mask"), in.at("image_grid_thw"),
                                                config.image_token_id, config.vision.spatial_merge_size);
    report("M-RoPE position ids (get_rope_index)", max_abs((positions - want.at("position_ids")).to(torch::kDouble)),
           0.0);
    auto pixels = in.at("pixel_values").clone().requires_grad_(true);
    const auto tap = model->forward(in.at("input_ids"), in.at("attention_mask"), pixels, in.at("image_grid_thw"));
    report("select-layer tap (before the final norm)", max_abs(tap - want.at("tap")), 1e-5 * max_abs(want.at("tap")));
    (tap * in.at("probe")).sum().backward();
    report("grad pixel_values", gradient_excess(pixels.grad(), want.at("grad.pixel_values")), 1e-5);
    check_gradients(*model, want, "grad.", false, true, static_cast<int64_t>(want.tensors.size()) - 3);
  });
}
