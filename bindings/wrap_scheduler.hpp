// Shared piece of the Scheduler binding: its userdata type (used by the checkpoint binding, which
// saves and restores the scheduler's position).
#pragma once
#include <memory>

#include "bindings/runtime.hpp"
#include "host/optim/scheduler.hpp"

namespace lrhost::bindings {

// The scheduler plus shared ownership of the optimizer it drives.
struct SchedulerHandle {
  std::shared_ptr<optim::Optimizer> optimizer;
  optim::LrScheduler scheduler;
};

template <>
struct LxTraits<SchedulerHandle> {
  static constexpr LxType type{"Scheduler", "lrhost.Scheduler"};
};

}  // namespace lrhost::bindings
