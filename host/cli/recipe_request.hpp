// What the CLI asks the recipe engine to do. The engine (a Lua VM) lives in bindings/, so host/
// stays free of Lua: the CLI fills this struct and calls run_recipe(), implemented there.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lrhost::cli {

enum class RecipeMode {
  run,   // execute the recipe
  show,  // stop at lr.config and print the resolved config as JSON
};

struct RecipeRequest {
  std::string recipe_path;
  std::vector<std::string> overrides;  // raw key=value arguments, checked by lr.config
  RecipeMode mode = RecipeMode::run;
  // `show --nproc/--gpus N`: the data-parallel world size to plan for (0: from the environment).
  int planned_world_size = 0;
  // `show --json`: stdout carries one JSON document, {"config": ..., "memory_plan": ...}.
  bool json_output = false;
  // `show --gpu-memory SIZE[,SIZE...]`: the plan also prints the largest batch per rank that fits each.
  std::vector<int64_t> planned_gpu_memory_bytes;
};

// Runs the recipe; returns the process exit code (0 success). Prints its own errors.
int run_recipe(const RecipeRequest& request);

// "LuaJIT 2.1.0-beta3 (GC64)", for --version.
std::string recipe_engine_version();

}  // namespace lrhost::cli
