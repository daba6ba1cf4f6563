// The Accelerator userdata type, shared by the bindings that take an Accelerator (lr.checkpoint's `acc`).
#pragma once
#include "bindings/runtime.hpp"
#include "host/accel/accelerator.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<accel::Accelerator> {
  static constexpr LxType type{"Accelerator", "lrhost.Accelerator"};
};

}  // namespace lrhost::bindings
