// Interop check of lrhost's `groot` processors on a base checkpoint with its own statistics against LeRobot
// 0.6.1 (tests/interop/groot_stats_pipeline_oracle.py's output, two cases): LeRobot's folder loaded by
// lrhost — the checkpoint-stats pack step (grouped q01 / q99 normalisation, the valid horizon 6 of 8, the
// cameras in the checkpoint's order) and groot_n1_7_action_decode_v1 with its LIBERO transform ("stats"),
// or the dataset stats with the checkpoint's horizon and cameras ("config_only"); the processed training
// and inference batches, the eval loss, the sampled and postprocessed chunks, a (B, D) step and a crafted
// action; the policy's horizons; processors built afresh from the base checkpoint write LeRobot's files;
// lrhost's folder is written for groot_stats_pipeline_oracle.py --reload.
//
//   lrhost_groot_stats_pipeline_check ORACLE_DIR   (HF_HUB_CACHE = ORACLE_DIR/hf_cache)
#include <cstdio>
#include <filesystem>

#include "host/ckpt/pretrained_dir.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/groot/groot_policy.hpp"
#include "host/policy/processors.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
using namespace lrhost;
using interop::max_abs;
using interop::report;

namespace {

double exact(const torch::Tensor& got, const torch::Tensor& want) {
  if (!got.sizes().equals(want.sizes())) return 1e30;
  return max_abs(got.to(torch::kDouble) - want.to(torch::kDouble));
}

policy::Batch raw_batch(const fs::path& dir, bool with_action) {
  policy::Batch batch;
  for (const auto& [name, tensor] : io::read_safetensors(dir / "raw_batch.safetensors").tensors)
    if (with_action || (name != "action" && name != "action_is_pad")) batch[name] = tensor.clone();
  return batch;
}

// groot_oracle.py's dataset stats (raw_batch.json): every dim of a feature the same min / max.
data::DatasetStats dataset_stats(const nlohmann::ordered_json& stats, int64_t dims) {
  data::DatasetStats out;
  for (const auto& [key, entry] : stats.items())
    for (const auto& [name, value] : entry.items()) out[key].set(name, torch::full({dims}, value.get<float>()));
  return out;
}

void compare_batch(const std::string& what, const policy::Batch& got, const io::SafetensorsContent& want) {
  for (const char* key : {"input_ids", "attention_mask", "state", "action", "action_mask", "embodiment_id"}) {
    if (!want.find(key)) continue;
    report(what + " " + key + " (exact)", got.count(key) ? exact(got.at(key), want.at(key)) : 1e30, 0.0);
  }
  const auto& pixels = got.at("pixel_values");
  report(what + " pixel_values", exact(pixels.reshape({-1, pixels.size(-1)}), want.at("pixel_values")), 1e-6);
  report(what + " image_grid_thw (exact)", exact(got.at("image_grid_thw").reshape({-1, 3}), want.at("image_grid_thw")),
         0.0);
}

void check_case(const fs::path& oracle, const std::string& name, const fs::path& geometry) {
  const fs::path dir = oracle / name;
  std::printf("--- case %s\n", name.c_str());
  const auto result = io::read_json_file(dir / "result.json", "");
  io::write_file_atomic(dir / "policy" / policy::groot::kGrootSettingsFile,
                        nlohmann::json{{"geometry", geometry.string()}}.dump());
  auto loaded = ckpt::load_pretrained(dir / "policy");
  auto& groot = dynamic_cast<policy::groot::GrootPolicy&>(*loaded);
  const auto& processors = *groot.processors();
  const auto raw = io::read_json_file(oracle / "raw_batch.json", "");
  const auto tasks = raw.at("task").get<std::vector<std::string>>();

  const auto processed = processors.normalize(raw_batch(oracle, true), tasks);
  compare_batch("processed", processed, io::read_safetensors(dir / "processed_batch.safetensors"));
  compare_batch("inference batch", processors.normalize(raw_batch(oracle, false), tasks),
                io::read_safetensors(dir / "inference_batch.safetensors"));

  groot.eval();
  torch::manual_seed(123);
  const double want_loss = result.at("eval_loss").get<double>();
  {
    torch::NoGradGuard no_grad;
    report("eval-mode loss", std::abs(groot.forward(processed).loss.item<double>() - want_loss), 1e-5 * want_loss);
  }
  const auto chunks = io::read_safetensors(dir / "chunk.safetensors");
  torch::manual_seed(7);
  const auto chunk = groot.predict_action_chunk(processed);
  report("sampled chunk (seed 7, the checkpoint's horizon)", exact(chunk, chunks.at("chunk")),
         1e-5 * max_abs(chunks.at("chunk")));
  // The postprocessor on LeRobot's own inputs: exact.
  report("postprocessed chunk (exact)", exact(processors.unnormalize(chunks.at("chunk")), chunks.at("chunk_post")), 0);
  report("postprocessed (B, D) step (exact)",
         exact(processors.unnormalize(chunks.at("chunk").select(1, 0)), chunks.at("step_post")), 0);
  report("postprocessed crafted action (exact)",
         exact(processors.unnormalize(chunks.at("crafted")), chunks.at("crafted_post")), 0);
  report("prediction horizon", std::abs(chunk.size(1) - result.at("prediction_horizon").get<int64_t>()), 0);
  report("action delta indices",
         groot.delta_indices().at("action") == result.at("action_delta_indices").get<std::vector<int64_t>>() ? 0 : 1,
         0);

  // Processors built from the base checkpoint and the dataset's stats, as lr.policy.new builds them.
  const auto built = policy::PolicyProcessors::for_policy(
      groot, {},
      dataset_stats(raw.at("dataset_stats"),
                    groot.config().at("output_features").at("action").at("shape")[0].get<int64_t>()));
  const fs::path fresh = dir / "lrhost_fresh";
  io::remove_tree(fresh);  // not fs::remove_all: see io/atomic_dir.hpp
  fs::create_directories(fresh);
  built.save(fresh);
  for (const auto& entry : fs::directory_iterator(dir / "policy")) {
    const auto file = entry.path().filename().string();
    if (file.rfind("policy_", 0) != 0) continue;
    double differs = 1;
    if (!fs::exists(fresh / file)) {
      std::printf("lrhost wrote no %s\n", file.c_str());
    } else if (entry.path().extension() == ".json") {
      const auto mine = io::read_json_file(fresh / file, ""), lerobots = io::read_json_file(entry.path(), "");
      differs = mine == lerobots ? 0 : 1;
      if (differs) std::printf("lrhost: %s\nLeRobot: %s\n", mine.dump().c_str(), lerobots.dump().c_str());
    } else {
      const auto mine = io::read_safetensors(fresh / file), lerobots = io::read_safetensors(entry.path());
      differs = mine.tensors.size() == lerobots.tensors.size() ? 0 : 1;
      for (const auto& [key, tensor] : lerobots.tensors)
        differs = std::max(differs, mine.find(key) && mine.at(key).scalar_type() == tensor.scalar_type()
                                        ? exact(mine.at(key), tensor)
                                        : 1.0);
    }
    report("built from the base: " + file + " as LeRobot's", differs, 0);
  }
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(fresh))
    files += entry.path().filename().string().rfind("policy_", 0) == 0;
  std::size_t theirs = 0;
  for (const auto& entry : fs::directory_iterator(dir / "policy"))
    theirs += entry.path().filename().string().rfind("policy_", 0) == 0;
  report("built from the base: as many processor files as LeRobot's", files == theirs ? 0 : 1, 0);

  // lrhost's folder of the loaded policy, for the oracle's --reload.
  const fs::path saved = dir / "lrhost_policy";
  io::remove_tree(saved);
  ckpt::save_pretrained(groot, saved);
}

}  // namespace

int main(int argc, char** argv) {
  return interop::run_check(argc, argv, "lrhost_groot_stats_pipeline_check", [](const fs::path& dir) {
    // The oracle's tiny Qwen3-VL as an lrhost geometry folder (as groot_folder_check.cpp).
    const fs::path geometry = dir / "lrhost_geometry";
    fs::create_directories(geometry);
    for (const auto& entry : fs::recursive_directory_iterator(dir / "hf_cache"))
      if (entry.path().filename() == "config.json")
        fs::copy_file(entry.path(), geometry / "backbone_config.json", fs::copy_options::overwrite_existing);
    for (const char* name : {"stats", "config_only"}) check_case(dir, name, geometry);
  });
}
