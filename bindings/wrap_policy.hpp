// Shared pieces of the Policy binding (used by the optimizer binding to take a policy's groups).
#pragma once
#include "bindings/runtime.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<policy::Policy> {
  static constexpr LxType type{"Policy", "lrhost.Policy"};
};

}  // namespace lrhost::bindings
