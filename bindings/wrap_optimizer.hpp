// Shared pieces of the Optimizer binding (the scheduler binding takes optimizers).
#pragma once
#include "bindings/runtime.hpp"
#include "host/optim/optimizer.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<optim::Optimizer> {
  static constexpr LxType type{"Optimizer", "lrhost.Optimizer"};
};

}  // namespace lrhost::bindings
