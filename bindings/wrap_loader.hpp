// The Loader userdata type, shared by the bindings that take a Loader (lr.checkpoint's `loader`).
#pragma once
#include "bindings/runtime.hpp"
#include "host/data/batch_loader.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<data::BatchLoader> {
  static constexpr LxType type{"Loader", "lrhost.Loader"};
};

// Batch tables of a loader built with preprocess = policy carry a marker (a shared metatable), so that
// Policy:preprocess refuses to normalize them a second time (a recipe copied from before the option).
void mark_preprocessed_batch(lua_State* L, int index);
bool is_preprocessed_batch(lua_State* L, int index);

}  // namespace lrhost::bindings
