// The Loader userdata type, shared by the bindings that take a Loader (lr.checkpoint's `loader`).
#pragma once
#include "bindings/runtime.hpp"
#include "host/data/batch_loader.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<data::BatchLoader> {
  static constexpr LxType type{"Loader", "lrhost.Loader"};
};

}  // namespace lrhost::bindings
