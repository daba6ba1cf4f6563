// Profiler traces for benchmarks: runs a function under LibTorch's Kineto profiler (CPU ops, and
// CUDA kernels and memory copies with their streams when a GPU is present) and writes a Chrome
// trace JSON (open it in chrome://tracing or Perfetto). On a GPU it shows whether FSDP's NCCL
// kernels run on their own stream while compute kernels run on the default one.
#pragma once
#include <functional>
#include <string>

namespace lrhost::util {

void write_profiler_trace(const std::string& path, const std::function<void()>& body);

}  // namespace lrhost::util
