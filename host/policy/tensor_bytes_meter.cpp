// The thread's CPU tensor allocations seen through ATen's memory-profiler hook; see
// tensor_bytes_meter.hpp.
#include "host/policy/tensor_bytes_meter.hpp"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>

namespace lrhost::policy {

struct CpuTensorBytesMeter::Reporter final : c10::MemoryReportingInfoBase {
  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, size_t /*total_allocated*/, size_t /*total_reserved*/,
                         c10::Device device) override {
    // Frees arrive as negative sizes.
    if (!device.is_cpu()) return;
    net += alloc_size;
    peak = std::max(peak, net);
  }
  bool memoryProfilingEnabled() const override { return true; }

  int64_t net = 0, peak = 0;
};

CpuTensorBytesMeter::CpuTensorBytesMeter()
    : reporter_(std::make_shared<Reporter>()),
      guard_(std::make_unique<c10::DebugInfoGuard>(c10::DebugInfoKind::PROFILER_STATE, reporter_)) {}

CpuTensorBytesMeter::~CpuTensorBytesMeter() = default;

int64_t CpuTensorBytesMeter::net_bytes() const {
  return reporter_->net;
}
int64_t CpuTensorBytesMeter::peak_bytes() const {
  return reporter_->peak;
}

}  // namespace lrhost::policy
