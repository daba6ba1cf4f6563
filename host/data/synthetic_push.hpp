// The built-in dataset: a 2-D pushing task with a scripted expert, written as a LeRobot v3.0
// dataset so every shipped recipe and test runs without downloads. An agent (red disc) pushes a
// block (blue square) onto a goal (green disc) in the unit square. State = [agent x, y, block x, y,
// goal x, y]; action = the agent's velocity command [vx, vy] for the next frame, chosen by an expert
// that first moves behind the block and then pushes it toward the goal. The action is a function
// of what the state and the camera show, so a policy can learn it and beat a constant baseline.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "host/io/video_writer.hpp"

namespace lrhost::data {

struct SyntheticPushOptions {
  int episodes = 40;
  int fps = 10;
  int image_size = 64;          // square camera images
  int max_episode_length = 80;  // an episode also ends when the block reaches the goal
  uint64_t seed = 0;
  bool cameras_as_images = false;  // PNG image columns instead of mp4 video
  bool second_camera = false;      // adds a zoomed "observation.images.wrist" view around the agent
  // Extra action dimensions after (vx, vy), "extra_<k>": a smooth per-episode signal
  // sin(0.3 * frame + k + episode), for mixtures of robots with different action widths.
  int extra_action_dims = 0;
  io::VideoWriterOptions video;
};

// Writes the dataset to `root` (which must not exist or be empty) and returns the number of frames.
int64_t write_synthetic_push(const std::filesystem::path& root, const SyntheticPushOptions& options);

// The default dataset (200 episodes of seed 0, otherwise SyntheticPushOptions' defaults): its folder
// in the cache ($LRHOST_CACHE or ~/.cache/lrhost)/datasets/...; created
// on first use under a file lock, written to a temporary folder and renamed, so concurrent ranks and
// interrupted runs never see a half-written dataset.
std::filesystem::path default_dataset();

}  // namespace lrhost::data
