// Interop check of lrhost's GR00T N1.7 action head (host/policy/groot) against LeRobot 0.6.1's
// GR00TN17ActionHead: reads what groot_head_oracle.py wrote (config, weights under "action_head.",
// inputs, the noise and time LeRobot's head drew, its loss, gradients and sampled chunk), loads the
// weights with lrhost's strict loader and recomputes everything. Exits 1 when an item is outside its
// tolerance.
//
// Tolerances (fp32 on both sides, the same ops in the same order; only reduction orders inside
// matmul / SDPA kernels may differ): the loss and the chunk 1e-5 relative to their largest
// magnitude, gradients 1e-5 absolute + 1e-4 relative (the bound). The replayed draws — noise
// from randn after manual_seed(123), then the Beta time from the CPU generator — must be bit-equal.
//
//   lrhost_groot_head_check ORACLE_DIR
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/nn/module_weights.hpp"
#include "host/policy/groot/groot_action_head.hpp"
#include "host/util/error.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
using namespace lrhost;
using policy::groot::GrootActionHead;
using policy::groot::GrootHeadConfig;
using policy::groot::GrootHeadInputs;

using interop::check_gradients;
using interop::gradient_excess;
using interop::max_abs;
using interop::report;

int main(int argc, char** argv) {
  return interop::run_check(argc, argv, "lrhost_groot_head_check", [](const fs::path& dir) {
    const auto config = GrootHeadConfig::from_json(io::read_json_file(dir / "config.json", ""), "config.json");
    GrootActionHead head(config);
    nn::load_module_weights(*head, dir / "head.safetensors", {.prefix = "action_head."});
    head->eval();
    const auto inputs = io::read_safetensors(dir / "inputs.safetensors");
    const auto expected = io::read_safetensors(dir / "outputs.safetensors");
    const GrootHeadInputs in{inputs.at("backbone_features"), inputs.at("backbone_attention_mask"),
                             inputs.at("image_mask"), inputs.at("state"), inputs.at("embodiment_id")};

    // The draws, replayed in LeRobot's order.
    torch::manual_seed(123);
    const auto noise = torch::randn(inputs.at("action").sizes());
    const auto time = head->sample_time(inputs.at("action").size(0));
    report("noise (randn after manual_seed(123))", max_abs(noise - inputs.at("noise")), 0.0);
    report("time (Beta(1.5, 1) on the CPU generator)", max_abs(time - inputs.at("time")), 0.0);

    const auto loss =
        head->loss(in, inputs.at("action"), inputs.at("action_mask"), inputs.at("noise"), inputs.at("time"));
    const double want = expected.at("loss").item<double>();
    report("loss (" + std::to_string(want) + ")", std::abs(loss.item<double>() - want), 1e-5 * std::abs(want));
    loss.backward();
    check_gradients(*head, expected, "grad.", false, false);

    torch::NoGradGuard no_grad;
    const auto chunk = head->sample(in, inputs.at("sample_noise"));
    const auto& want_chunk = expected.at("action_pred");
    report("sampled chunk (4 Euler steps)", max_abs(chunk - want_chunk), 1e-5 * max_abs(want_chunk));
  });
}
