// Interop check of lrhost's `groot` policy as a whole against LeRobot 0.6.1's GrootPolicy
// (tests/interop/groot_oracle.py's output): LeRobot's saved folder loaded by lrhost (config.json,
// model.safetensors with the tied embedding under lm_head's name, the GR00T processor files); the raw
// batch through lrhost's preprocessor gives LeRobot's processed batch (token ids and masks exact,
// pixel_values within float rounding); the eval- and train-mode losses from the same seed, the
// gradients, the sampled chunk and the postprocessed chunk equal LeRobot's; lrhost's re-saved folder has
// LeRobot's key set, shapes, dtypes and processor JSON files, and loads back bit-equal. The oracle's
// backbone geometry (its one monkeypatch) is given to lrhost as `geometry` in groot_lrhost.json beside
// config.json: a folder holding its Qwen3-VL config.json as backbone_config.json.
//
//   lrhost_groot_folder_check ORACLE_DIR   (HF_HUB_CACHE = ORACLE_DIR/hf_cache)
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "host/ckpt/pretrained_dir.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/groot/groot_policy.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
using namespace lrhost;
using interop::max_abs;
using interop::report;

namespace {

policy::Batch raw_batch(const fs::path& dir) {
  policy::Batch batch;
  for (const auto& [name, tensor] : io::read_safetensors(dir / "raw_batch.safetensors").tensors)
    batch[name] = tensor.clone();
  return batch;
}

double exact(const torch::Tensor& got, const torch::Tensor& want) {
  if (!got.sizes().equals(want.sizes())) return 1e30;
  return max_abs(got.to(torch::kDouble) - want.to(torch::kDouble));
}

}  // namespace

int main(int argc, char** argv) {
  return interop::run_check(argc, argv, "lrhost_groot_folder_check", [](const fs::path& dir) {
    // The oracle's tiny Qwen3-VL (its monkeypatched backbone) as an lrhost geometry folder.
    const fs::path geometry = dir / "lrhost_geometry";
    fs::create_directories(geometry);
    for (const auto& entry : fs::recursive_directory_iterator(dir / "hf_cache"))
      if (entry.path().filename() == "config.json")
        fs::copy_file(entry.path(), geometry / "backbone_config.json", fs::copy_options::overwrite_existing);
    // LeRobot's config.json cannot name a backbone other than Cosmos-Reason2-2B's: lrhost's settings
    // file beside it does (LeRobot ignores it).
    io::write_file_atomic(dir / "policy" / policy::groot::kGrootSettingsFile,
                          nlohmann::json{{"geometry", geometry.string()}}.dump());
    auto loaded = ckpt::load_pretrained(dir / "policy");
    auto& groot = dynamic_cast<policy::groot::GrootPolicy&>(*loaded);
    const auto& processors = *groot.processors();

    // The preprocessor on the raw batch and its task strings.
    const auto tasks = io::read_json_file(dir / "raw_batch.json", "").at("task").get<std::vector<std::string>>();
    const auto processed = processors.normalize(raw_batch(dir), tasks);
    const auto want = io::read_safetensors(dir / "processed_batch.safetensors");
    for (const char* key : {"input_ids", "attention_mask", "state", "action", "action_mask", "embodiment_id"})
      report(std::string("processed ") + key + " (exact)", exact(processed.at(key), want.at(key)), 0.0);
    const auto& pixels = processed.at("pixel_values");
    report("processed pixel_values", exact(pixels.reshape({-1, pixels.size(-1)}), want.at("pixel_values")), 1e-6);
    report("processed image_grid_thw (exact)",
           exact(processed.at("image_grid_thw").reshape({-1, 3}), want.at("image_grid_thw")), 0.0);

    // Losses from LeRobot's seed: eval mode (noise and time drawn), train mode (dropouts too).
    const auto losses = io::read_json_file(dir / "loss.json", "");
    groot.eval();
    torch::manual_seed(123);
    auto eval_loss = groot.forward(processed).loss;
    const double want_eval = losses.at("eval_loss").get<double>();
    report("eval-mode loss", std::abs(eval_loss.item<double>() - want_eval), 1e-5 * std::abs(want_eval));
    eval_loss.backward();
    const auto grads = io::read_safetensors(dir / "grads.safetensors");
    interop::check_gradients(groot, grads, "", true, false, static_cast<int64_t>(grads.tensors.size()));
    groot.zero_grad();
    groot.train();
    torch::manual_seed(123);
    const double want_train = losses.at("train_loss").get<double>();
    report("train-mode loss (LeRobot's draws in its order)",
           std::abs(groot.forward(processed).loss.item<double>() - want_train), 1e-5 * std::abs(want_train));

    // Sampling and the postprocessor.
    const auto chunks = io::read_safetensors(dir / "chunk.safetensors");
    torch::manual_seed(7);
    const auto chunk = groot.predict_action_chunk(processed);
    report("sampled chunk (seed 7)", exact(chunk, chunks.at("chunk")), 1e-5 * max_abs(chunks.at("chunk")));
    report("postprocessed chunk", exact(processors.unnormalize(chunk), chunks.at("chunk_post")),
           1e-5 * max_abs(chunks.at("chunk_post")));

    // The weight-decay groups, by parameter name, for groot_reload_oracle.py to compare with LeRobot's
    // get_optim_params (the default tuning and, via the trainable set, LeRobot's freezing).
    {
      std::map<const c10::TensorImpl*, std::string> names;
      for (const auto& item : groot.named_parameters()) names[item.value().unsafeGetTensorImpl()] = item.key();
      nlohmann::json groups = nlohmann::json::array();
      for (const auto& group : groot.param_groups()) {
        nlohmann::json entry{{"weight_decay", group.weight_decay ? nlohmann::json(*group.weight_decay) : nullptr},
                             {"params", nlohmann::json::array()}};
        for (const auto& p : group.params) entry["params"].push_back(names.at(p.unsafeGetTensorImpl()));
        groups.push_back(entry);
      }
      io::write_file_atomic(dir / "lrhost_param_groups.json", groups.dump(1));
    }

    // lrhost's folder: LeRobot's layout, and back.
    const fs::path saved = dir / "lrhost_policy";
    io::remove_tree(saved);  // not fs::remove_all: see io/atomic_dir.hpp
    ckpt::save_pretrained(groot, saved);
    const auto theirs = io::read_safetensors(dir / "policy" / "model.safetensors");
    const auto ours = io::read_safetensors(saved / "model.safetensors");
    double layout = theirs.tensors.size() == ours.tensors.size() ? 0 : 1;
    for (const auto& [name, tensor] : theirs.tensors) {
      const auto* mine = ours.find(name);
      if (!mine || !mine->sizes().equals(tensor.sizes()) || mine->scalar_type() != tensor.scalar_type()) {
        std::printf("layout: %s differs\n", name.c_str());
        layout = 1;
      }
    }
    report("model.safetensors keys, shapes and dtypes as LeRobot's", layout, 0.0);
    for (const char* file : {"policy_preprocessor.json", "policy_postprocessor.json"}) {
      auto mine = io::read_json_file(saved / file, "");
      auto lerobots = io::read_json_file(dir / "policy" / file, "");
      report(std::string(file) + " as LeRobot's", mine == lerobots ? 0.0 : 1.0, 0.0);
      if (mine != lerobots) std::printf("lrhost: %s\nLeRobot: %s\n", mine.dump().c_str(), lerobots.dump().c_str());
    }
    auto reloaded = ckpt::load_pretrained(saved);
    double worst = 0;
    const auto before = groot.state_dict();
    const auto after = reloaded->state_dict();
    for (std::size_t i = 0; i < before.size(); ++i) worst = std::max(worst, exact(before[i].second, after[i].second));
    report("lrhost's folder loads back bit-equal", worst, 0.0);
    report("its processors load back equal", *reloaded->processors() == processors ? 0.0 : 1.0, 0.0);

    // A new policy from the base checkpoint (lr.policy.new's path: base_model_path's model.safetensors in
    // GR00TN17's names, file-backed): the weights LeRobot's GrootPolicy built from the same base.
    {
      auto config = nlohmann::json(io::read_json_file(dir / "policy" / "config.json", ""));
      config["geometry"] = geometry.string();
      const auto& spec = policy::policy_spec("groot");
      const auto base = spec.base_weights(config, {});
      report("base_weights names the base checkpoint's file",
             base && *base == fs::path(config["base_model_path"].get<std::string>()) / "model.safetensors" ? 0.0 : 1.0,
             0.0);
      auto fresh = ckpt::build_with_base_weights(config, {}, *base);
      report("built from the base, file-backed", fresh->weights_file_backed() ? 0.0 : 1.0, 0.0);
      double worst_base = 0;
      const auto built = fresh->state_dict();
      for (const auto& [name, tensor] : groot.state_dict()) {
        (void)tensor;
        const auto found = std::find_if(built.begin(), built.end(), [&](const auto& e) { return e.first == name; });
        worst_base = std::max(
            worst_base,
            found == built.end()
                ? 1e30
                : exact(found->second,
                        theirs.at(name == "_groot_model.backbone.model.model.language_model.embed_tokens.weight"
                                      ? "_groot_model.backbone.model.lm_head.weight"
                                      : name)));
      }
      report("its weights are LeRobot's policy's (built from the same base)", worst_base, 0.0);
    }

    // tune_llm = tune_visual = true (LeRobot's folder of that build): the backbone trains too; its 103
    // gradients (the oracle stores those frozen by default) and the loss.
    const fs::path tuned_dir = dir / "tune_llm_visual";
    io::write_file_atomic(tuned_dir / "policy" / policy::groot::kGrootSettingsFile,
                          nlohmann::json{{"geometry", geometry.string()}}.dump());
    auto tuned = ckpt::load_pretrained(tuned_dir / "policy");
    tuned->eval();
    torch::manual_seed(123);
    auto tuned_loss = tuned->forward(tuned->processors()->normalize(raw_batch(dir), tasks)).loss;
    const double want_tuned = io::read_json_file(tuned_dir / "loss.json", "").at("eval_loss").get<double>();
    report("tune_llm + tune_visual: eval-mode loss", std::abs(tuned_loss.item<double>() - want_tuned),
           1e-5 * std::abs(want_tuned));
    tuned_loss.backward();
    const auto tuned_grads = io::read_safetensors(tuned_dir / "grads.safetensors");
    std::map<std::string, torch::Tensor> params;
    for (const auto& item : tuned->named_parameters()) params[item.key()] = item.value();
    double worst_grad = 0;
    int64_t compared = 0;
    for (const auto& [name, want_grad] : tuned_grads.tensors) {
      auto found = params.find(name);
      if (found == params.end() || !found->second.requires_grad() || !found->second.grad().defined()) {
        std::printf("FAIL: lrhost has no gradient of %s\n", name.c_str());
        ++interop::failures();
        continue;
      }
      worst_grad = std::max(worst_grad, interop::gradient_excess(found->second.grad(), want_grad));
      ++compared;
    }
    report("tune_llm + tune_visual: the backbone's " + std::to_string(compared) + " gradients", worst_grad, 1e-5);
  });
}
