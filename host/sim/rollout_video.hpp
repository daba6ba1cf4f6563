// Rollout videos of an evaluation: a whole clip of rendered frames written as one mp4 through the
// dataset's video writer (its default encoder settings), so a user can watch what a policy did.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <filesystem>

namespace lrhost::sim {

// Writes `frames` (uint8 [T, H, W, 3] RGB, T >= 1, H and W even; any device) to `file` at `fps`
// frames per second, creating its parent folders; returns T. Errors (util::DataError for bad frames,
// util::ConfigError for a bad fps, util::IoError for the file) name the file.
int64_t write_rollout_video(const std::filesystem::path& file, const torch::Tensor& frames, int fps);

}  // namespace lrhost::sim
