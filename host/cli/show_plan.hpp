// The memory plan part of `lrhost show`: for a recipe whose config has a `policy` table, builds that
// policy on the CPU for the dataset's features (config.dataset.root, or the built-in dataset when it
// is empty or absent) and renders accel::MemoryPlan for the planned world size, with the activations
// per sample measured by two training forwards on the CPU (policy/activation_probe.hpp). Nothing touches a GPU
// and no process group starts. When LRHOST_PLAN_JSON names a file, the plan is also written there as
// JSON (tests compare it with what training measures). `show --json` puts the config and the plan
// into one JSON document, the only thing written to stdout.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::cli {

struct ShownPlan {
  std::string text;             // the table `lrhost show` prints
  nlohmann::ordered_json json;  // the same plan as data (accel::memory_plan_json)
};

// The plan, or nullopt when the config names no policy type.
// gpu_memory_bytes (show --gpu-memory): the plan also gives the largest batch per rank that fits each.
std::optional<ShownPlan> show_memory_plan(const nlohmann::json& config, int64_t world_size,
                                          const std::vector<int64_t>& gpu_memory_bytes = {});

// `lrhost show --json`'s document: {"config": ..., "memory_plan": ... or null}.
nlohmann::ordered_json show_json_document(const nlohmann::json& config, const std::optional<ShownPlan>& plan);

// While alive, writes to stdout (ours, a library's, an encoder's) go to stderr, so that a JSON
// document printed after it ends is all that stdout carries.
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr();
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_ = -1;
};

}  // namespace lrhost::cli
