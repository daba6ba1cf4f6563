// The memory plan part of `lrhost show`: for a recipe whose config has a `policy` table, builds that
// policy on the CPU for the dataset's features (config.dataset.root, or the built-in dataset when it
// is empty or absent) and renders accel::MemoryPlan for the planned world size. Nothing touches a GPU
// and no process group starts. When LRHOST_PLAN_JSON names a file, the plan is also written there as
// JSON (tests compare it with what training measures).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace lrhost::cli {

// The plan's text, or nullopt when the config names no policy type.
std::optional<std::string> show_memory_plan(const nlohmann::json& config, int64_t world_size);

}  // namespace lrhost::cli
