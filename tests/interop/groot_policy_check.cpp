// Interop check of lrhost's GR00T N1.7 network (host/policy/groot/groot_model) against LeRobot 0.6.1's
// GrootPolicy: reads what groot_oracle.py wrote — the tiny base config, the Qwen3-VL config of its
// hub-layout cache, LeRobot's saved model.safetensors, the batch LeRobot's preprocessor produced, the
// noise and Beta time its eval-mode forward drew, its loss, the gradients of the 97 trainable tensors
// (default tuning: the action head) and its sampled chunk — and recomputes them from the processed
// batch. (The processors themselves are not lrhost's yet: this checks the network.) Exits 1 when an
// item is outside its tolerance.
//
// Tolerances: fp32 on both sides, the same ops: loss and chunk 1e-5 relative, gradients 1e-5
// absolute + 1e-4 relative; the replayed draws bit-equal.
//
//   lrhost_groot_policy_check ORACLE_DIR
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/groot/groot_model.hpp"
#include "host/util/error.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
using namespace lrhost;
using interop::check_gradients;
using interop::gradient_excess;
using interop::max_abs;
using interop::report;
using policy::groot::GrootBatch;
using policy::groot::GrootModel;
using policy::groot::GrootModelConfig;

int main(int argc, char** argv) {
  return interop::run_check(argc, argv, "lrhost_groot_policy_check", [](const fs::path& dir) {
    fs::path backbone_config;
    for (const auto& entry : fs::recursive_directory_iterator(dir / "hf_cache"))
      if (entry.path().filename() == "config.json") backbone_config = entry.path();
    const auto config = GrootModelConfig::from_json(io::read_json_file(dir / "base" / "config.json", ""),
                                                    io::read_json_file(backbone_config, ""), "base/config.json");
    GrootModel model(config);
    model->load_weights(dir / "policy" / "model.safetensors", "_groot_model.");
    model->eval();
    // Default tuning: the backbone frozen, the action head trained.
    for (auto& p : model->qwen->parameters()) p.set_requires_grad(false);
    const auto b = io::read_safetensors(dir / "processed_batch.safetensors");
    const auto draws = io::read_safetensors(dir / "draws.safetensors");
    const GrootBatch batch{b.at("input_ids"),      b.at("attention_mask"), b.at("pixel_values"),
                           b.at("image_grid_thw"), b.at("state"),          b.at("embodiment_id")};
    const auto& action = b.at("action");
    torch::manual_seed(123);
    const auto noise = torch::randn(action.sizes());
    const auto time = model->action_head->sample_time(action.size(0));
    report("noise (randn after manual_seed(123))", max_abs(noise - draws.at("eval.noise")), 0.0);
    report("time (Beta on the CPU generator)", max_abs(time - draws.at("eval.time")), 0.0);
    const auto loss = model->loss(batch, action, b.at("action_mask"), noise, time);
    const double want = io::read_json_file(dir / "loss.json", "").at("eval_loss").get<double>();
    report("eval-mode loss (" + std::to_string(want) + ")", std::abs(loss.item<double>() - want),
           1e-5 * std::abs(want));
    loss.backward();
    const auto grads = io::read_safetensors(dir / "grads.safetensors");
    check_gradients(*model, grads, "_groot_model.", true, false, static_cast<int64_t>(grads.tensors.size()));
    // Train mode: dropout (p 0.2 at four sites per block) and state dropout drawn by the head itself,
    // in LeRobot's order, from the same seed (the backbone is frozen and stays in eval mode).
    {
      model->action_head->train();
      torch::manual_seed(123);
      const auto train = model->training_loss(batch, action, b.at("action_mask"));
      const double want_train = io::read_json_file(dir / "loss.json", "").at("train_loss").get<double>();
      report("train-mode loss, LeRobot's draws (" + std::to_string(want_train) + ")",
             std::abs(train.item<double>() - want_train), 1e-5 * std::abs(want_train));
      model->action_head->eval();
      torch::manual_seed(123);
      report("training_loss in eval mode = the loss with replayed draws",
             std::abs(model->training_loss(batch, action, b.at("action_mask")).item<double>() - loss.item<double>()),
             0.0);
    }
    torch::NoGradGuard no_grad;
    const auto chunk_files = io::read_safetensors(dir / "chunk.safetensors");
    const auto& want_chunk = chunk_files.at("chunk");
    const auto chunk =
        model->sample(batch, chunk_files.at("noise")).narrow(1, 0, want_chunk.size(1)).narrow(2, 0, want_chunk.size(2));
    report("sampled chunk (before the postprocessor)", max_abs(chunk - want_chunk), 1e-5 * max_abs(want_chunk));
  });
}
