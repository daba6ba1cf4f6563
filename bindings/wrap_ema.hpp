// The EMA userdata type, shared by the bindings that take one (lr.checkpoint's `ema`).
#pragma once
#include "bindings/runtime.hpp"
#include "host/optim/weight_ema.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<optim::WeightEma> {
  static constexpr LxType type{"Ema", "lrhost.Ema"};
};

}  // namespace lrhost::bindings
