// The text of `lrhost --version`: lrhost, LibTorch, the recipe engine, and CUDA/NCCL availability.
#pragma once
#include <string>

namespace lrhost::cli {
std::string version_report();
}
