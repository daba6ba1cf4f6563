// The non-optimizer files of LeRobot's training_state/ folder (common/train_utils.py,
// utils/random_utils.py): rng_state.safetensors with torch's CPU generator state
// ("torch_rng_state", uint8) and, on CUDA machines, the current device's ("torch_cuda_rng_state"),
// and training_step.json with the step, the data-parallel layout and batch settings the run used,
// plus lrhost's "sampler" entry: the loader position (Loader:state()), which makes the resumed run
// see exactly the samples the uninterrupted run would have seen.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace lrhost::ckpt {

inline constexpr const char* kRngStateFile = "rng_state.safetensors";
inline constexpr const char* kTrainingStepFile = "training_step.json";

void save_rng_state(const std::filesystem::path& dir);
// Restores the generators saved in `dir` (the CUDA one only when this machine has CUDA).
void load_rng_state(const std::filesystem::path& dir);

struct TrainingStep {
  int64_t step = 0;
  int64_t dp_world_size = 1;
  int64_t batch_size = 0;  // per rank; 0 when unknown
  int64_t grad_accum_steps = 1;
  int64_t dp_replicate = 1, dp_shard = 1, ring_degree = 1, ulysses_degree = 1;
  nlohmann::json sampler;  // the loader state, null when no loader was attached

  nlohmann::ordered_json to_json() const;
  // Reads LeRobot's current layout and its older {step, num_processes, batch_size} one.
  static TrainingStep from_json(const nlohmann::json& value, const std::string& what);
};

void save_training_step(const TrainingStep& step, const std::filesystem::path& dir);
TrainingStep load_training_step(const std::filesystem::path& dir);

}  // namespace lrhost::ckpt
