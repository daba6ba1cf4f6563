// Counts the bytes of CPU tensor storages that ATen's allocator hands out, minus those it takes
// back, on the calling thread while a meter is alive: after a training forward, what is still
// counted is what the forward left alive (autograd's saved tensors, its outputs), and the peak is
// the most it held at once (a save's host copies). Unlike the
// process heap, it never sees a math library's private buffers (MKL, oneDNN allocate their own
// workspace outside ATen), nor what other threads do.
//
// How: ATen's default CPU allocator reports every allocation and free to the thread's memory
// profiler (c10::reportMemoryUsageToProfiler) whenever one is installed; the meter installs itself
// as that profiler (c10::DebugInfoKind::PROFILER_STATE) for its lifetime, so a profiler already
// running on the thread misses what happens meanwhile. Storages freed on another thread are not
// seen; a training forward frees its temporaries on the thread that made them.
#pragma once
#include <cstdint>
#include <memory>

namespace c10 {
class DebugInfoGuard;
}

namespace lrhost::policy {

class CpuTensorBytesMeter {
 public:
  CpuTensorBytesMeter();
  ~CpuTensorBytesMeter();
  CpuTensorBytesMeter(const CpuTensorBytesMeter&) = delete;
  CpuTensorBytesMeter& operator=(const CpuTensorBytesMeter&) = delete;

  // Bytes allocated minus bytes freed since construction (negative when the thread freed storages
  // it had before).
  int64_t net_bytes() const;
  // The highest net_bytes() reached since construction (0 when nothing was allocated): the peak of
  // what the thread held on top of what it had, e.g. a checkpoint save's host copies.
  int64_t peak_bytes() const;

 private:
  struct Reporter;
  std::shared_ptr<Reporter> reporter_;
  std::unique_ptr<c10::DebugInfoGuard> guard_;
};

}  // namespace lrhost::policy
