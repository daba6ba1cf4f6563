// Builds the --version report. CUDA runtime and NCCL versions are read through dlsym from the
// libraries LibTorch's CUDA build already loaded, so no CUDA headers are needed and a CPU-only
// machine simply reports what it has; so is the allocator (jemalloc's mallctl).
#include "host/cli/version.hpp"

#include <dlfcn.h>
#include <torch/torch.h>

#include "host/util/heap_bytes.hpp"

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

// Which malloc the process runs on: jemalloc (found by its mallctl) with its decay setting, or the C
// library's.
std::string allocator_line() {
  auto mallctl = util::jemalloc_mallctl();
  if (mallctl == nullptr) return "allocator: C library malloc\n";
  const char* version = nullptr;
  size_t size = sizeof(version);
  std::string line = "allocator: jemalloc";
  if (mallctl("version", &version, &size, nullptr, 0) == 0 && version != nullptr) line += std::string(" ") + version;
  ssize_t dirty_decay_ms = 0;
  size = sizeof(dirty_decay_ms);
  if (mallctl("opt.dirty_decay_ms", &dirty_decay_ms, &size, nullptr, 0) == 0)
    line += dirty_decay_ms < 0 ? ", freed memory kept for reuse (dirty_decay_ms -1)"
                               : ", freed memory returned after " + std::to_string(dirty_decay_ms) + " ms";
  return line + "\n";
}

}  // namespace

std::string version_report(const std::string& recipe_engine) {
  std::string text = "lrhost " LRHOST_VERSION "\n";
  text += "LibTorch " TORCH_VERSION "\n";
  text += recipe_engine + "\n";
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
  text += allocator_line();
  return text;
}

}  // namespace lrhost::cli
