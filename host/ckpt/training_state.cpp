// RNG state and training_step.json of a checkpoint; see training_state.hpp.
#include "host/ckpt/training_state.hpp"

#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <torch/cuda.h>

#include <mutex>
#include <optional>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {
namespace fs = std::filesystem;

namespace {
at::Generator cpu_generator() {
  return at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
}

std::optional<at::Generator> cuda_generator() {
  if (!torch::cuda::is_available()) return std::nullopt;
  return at::globalContext().defaultGenerator(c10::Device(c10::kCUDA));
}

int64_t integer_field(const nlohmann::json& value, const char* key, int64_t fallback, const std::string& what,
                      bool required = false) {
  if (!value.contains(key) || value[key].is_null()) {
    if (required) throw util::DataError(what + ": missing '" + key + "'");
    return fallback;
  }
  if (!value[key].is_number_integer())
    throw util::DataError(what + ": '" + key + "' must be an integer, got " + value[key].dump());
  return value[key].get<int64_t>();
}
}  // namespace

void save_rng_state(const fs::path& dir) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  {
    auto generator = cpu_generator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    tensors.emplace_back("torch_rng_state", generator.get_state());
  }
  if (auto cuda = cuda_generator()) {
    std::lock_guard<std::mutex> lock(cuda->mutex());
    tensors.emplace_back("torch_cuda_rng_state", cuda->get_state());
  }
  io::write_safetensors(dir / kRngStateFile, tensors);
}

void load_rng_state(const fs::path& dir) {
  const fs::path file = dir / kRngStateFile;
  auto content = io::read_safetensors(file);
  const torch::Tensor& cpu = content.at("torch_rng_state");
  if (cpu.scalar_type() != torch::kUInt8 || cpu.dim() != 1)
    throw util::DataError(file.string() + ": 'torch_rng_state' must be a 1-D uint8 tensor");
  try {
    auto generator = cpu_generator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(cpu.clone());
  } catch (const c10::Error& error) {
    throw util::DataError(file.string() + ": 'torch_rng_state' is not a CPU generator state (" +
                          error.what_without_backtrace() + ")");
  }
  if (auto cuda = cuda_generator(); cuda && content.find("torch_cuda_rng_state")) {
    std::lock_guard<std::mutex> lock(cuda->mutex());
    cuda->set_state(content.at("torch_cuda_rng_state").clone());
  }
}

nlohmann::ordered_json TrainingStep::to_json() const {
  nlohmann::ordered_json j;
  j["step"] = step;
  j["dp_world_size"] = dp_world_size;
  j["batch_size"] = batch_size;
  j["grad_accum_steps"] = grad_accum_steps;
  j["parallelism"] = {{"dp_replicate", dp_replicate},
                      {"dp_shard", dp_shard},
                      {"ring_degree", ring_degree},
                      {"ulysses_degree", ulysses_degree}};
  j["sampler"] = sampler;
  return j;
}

TrainingStep TrainingStep::from_json(const nlohmann::json& value, const std::string& what) {
  if (!value.is_object()) throw util::DataError(what + ": expected a JSON object");
  TrainingStep s;
  s.step = integer_field(value, "step", 0, what, true);
  if (s.step < 0) throw util::DataError(what + ": 'step' must be >= 0");
  s.dp_world_size = integer_field(value, "dp_world_size", integer_field(value, "num_processes", 1, what), what);
  s.batch_size = integer_field(value, "batch_size", 0, what);
  s.grad_accum_steps = integer_field(value, "grad_accum_steps", 1, what);
  if (value.contains("parallelism") && value["parallelism"].is_object()) {
    const auto& p = value["parallelism"];
    s.dp_replicate = integer_field(p, "dp_replicate", 1, what + " parallelism");
    s.dp_shard = integer_field(p, "dp_shard", 1, what + " parallelism");
    s.ring_degree = integer_field(p, "ring_degree", 1, what + " parallelism");
    s.ulysses_degree = integer_field(p, "ulysses_degree", 1, what + " parallelism");
  }
  if (value.contains("sampler")) s.sampler = value["sampler"];
  return s;
}

void save_training_step(const TrainingStep& step, const fs::path& dir) {
  io::write_file_atomic(dir / kTrainingStepFile, step.to_json().dump(4));
}

TrainingStep load_training_step(const fs::path& dir) {
  const fs::path file = dir / kTrainingStepFile;
  nlohmann::json value = io::read_json_file(file, "the file is corrupt or truncated; use an earlier checkpoint");
  return TrainingStep::from_json(value, file.string());
}

}  // namespace lrhost::ckpt
