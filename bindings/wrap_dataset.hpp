// Shared pieces of the data bindings: the Dataset userdata type and the function that builds a
// Loader for a given rank layout (used by Dataset:loader and Accelerator:loader).
#pragma once
#include <lua.hpp>

#include "bindings/runtime.hpp"
#include "host/data/lerobot_dataset.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<data::FrameSource> {
  static constexpr LxType type{"Dataset", "lrhost.Dataset"};
};

// Pushes a Loader over `dataset` with the options table at `options_index` (may be none).
void push_loader(lua_State* L, std::shared_ptr<data::FrameSource> dataset, int options_index, int rank, int world_size,
                 c10::Device device);

}  // namespace lrhost::bindings
