// delta_timestamps: per-key time offsets (seconds) that turn one frame into a window of frames,
// exactly as LeRobot resolves them (shared/reference/lerobot.md section 1.8): each offset must be a
// multiple of 1/fps within tolerance_s, becomes round(d * fps) frames, and queries outside the
// episode are clamped to its first/last frame and flagged in `<key>_is_pad`.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "host/data/dataset_info.hpp"

namespace lrhost::data {

using DeltaTimestamps = std::map<std::string, std::vector<double>>;
using DeltaIndices = std::map<std::string, std::vector<int64_t>>;

// Checks keys (must be features of the dataset, not text) and tolerance; ConfigError naming the key
// and the offending offsets otherwise.
DeltaIndices resolve_delta_timestamps(const DeltaTimestamps& deltas, const DatasetInfo& info, double tolerance_s);

struct WindowQuery {
  std::vector<int64_t> indices;  // global frame indices, clamped to [episode_from, episode_to)
  torch::Tensor is_pad;          // bool [T]
};

WindowQuery window_query(int64_t index, int64_t episode_from, int64_t episode_to, const std::vector<int64_t>& offsets);

}  // namespace lrhost::data
