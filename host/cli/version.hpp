// The text of `lrhost --version`: lrhost, LibTorch, the recipe engine, and CUDA/NCCL availability.
#pragma once
#include <string>

namespace lrhost::cli {
// `recipe_engine` is the recipe engine's line (recipe_engine_version(), which the bindings provide).
std::string version_report(const std::string& recipe_engine);
}  // namespace lrhost::cli
