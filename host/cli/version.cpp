// Builds the --version report. CUDA runtime and NCCL versions are read through dlsym from the
// libraries LibTorch's CUDA build already loaded, so no CUDA headers are needed and a CPU-only
// machine simply reports what it has.
#include "host/cli/version.hpp"

#include <dlfcn.h>
#include <torch/torch.h>

#include "host/cli/recipe_request.hpp"

namespace lrhost::cli {
namespace {

// Calls `int name(int*)` if some loaded library provides it.
std::optional<int> loaded_library_version(const char* symbol) {
  using VersionFn = int (*)(int*);
  auto fn = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, symbol));
  int version = 0;
  if (fn == nullptr || fn(&version) != 0) return std::nullopt;
  return version;
}

}  // namespace

std::string version_report() {
  std::string text = "lrhost " LRHOST_VERSION "\n";
  text += "LibTorch " TORCH_VERSION "\n";
  text += recipe_engine_version() + "\n";
  auto cuda_runtime = loaded_library_version("cudaRuntimeGetVersion");
  std::string cuda = cuda_runtime ? "CUDA runtime " + std::to_string(*cuda_runtime / 1000) + "." +
                                        std::to_string(*cuda_runtime % 1000 / 10)
                                  : std::string("CUDA runtime not loaded");
  if (torch::cuda::is_available())
    text += cuda + ", " + std::to_string(torch::cuda::device_count()) + " GPU(s) available\n";
  else
    text += cuda + ", no GPU available\n";
  auto nccl = loaded_library_version("ncclGetVersion");
  text += nccl ? "NCCL " + std::to_string(*nccl / 10000) + "." + std::to_string(*nccl / 100 % 100) + "." +
                     std::to_string(*nccl % 100) + "\n"
               : std::string("NCCL not available\n");
  return text;
}

}  // namespace lrhost::cli
