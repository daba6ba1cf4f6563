// The pushing task as an environment for closed-loop evaluation (lrhost's counterpart of a gym env
// in `lerobot-eval`): reset() starts an episode, step(action) moves the world, and observations have
// exactly the layout of one item of the built-in dataset as the LeRobot loader delivers it, so a
// policy trained on that dataset can be run on the environment unchanged:
//   "observation.state"        float32 [6]       agent x, y, block x, y, goal x, y
//   "observation.images.top"   float32 [3, H, W] in [0, 1] (the rendered uint8 frame / 255, CHW)
//   "observation.images.wrist" float32 [3, H, W] only with second_camera
// Observations are unbatched (like a dataset item): the caller adds the batch dimension.
#pragma once
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "host/sim/push_world.hpp"

namespace lrhost::sim {

struct PushEnvOptions {
  uint64_t seed = 0;           // episode k (the k-th reset()) starts from seed + k
  int max_steps = 80;          // an episode is truncated after this many steps (the dataset's length)
  int image_size = 64;         // square cameras, even and >= 16 (as the dataset writer requires)
  bool second_camera = false;  // adds "observation.images.wrist"
};

using Observation = std::map<std::string, torch::Tensor>;

struct StepResult {
  Observation observation;
  double reward = 0;        // block-goal distance before the step minus after: progress toward the goal
  bool terminated = false;  // success: the block's centre is within kGoalRadius of the goal's centre
  bool truncated = false;   // max_steps reached without success
};

class PushEnv {
 public:
  // Throws util::ConfigError naming the option and its value when an option is out of range.
  explicit PushEnv(PushEnvOptions options);

  // Starts the next episode: the k-th call (k = 0, 1, ...) draws its start from
  // std::mt19937_64(seed + k), so an episode's start depends only on its number, never on how an
  // evaluation's episodes are split across ranks or environments.
  Observation reset();
  // Starts an episode from std::mt19937_64(episode_seed), e.g. episode k of a run = base seed + k.
  Observation reset(uint64_t episode_seed);
  // Starts an episode from a given state (replaying a dataset episode, tests).
  Observation reset_to(const World& start);

  // One step with the velocity command `action` = [vx, vy]. An action faster than kMaxSpeed is
  // scaled down to norm kMaxSpeed keeping its direction, as the expert's own actions are (so any
  // finite action is valid); a NaN or infinite component is a util::DataError naming the step. So is
  // a step before reset() or after the episode ended (terminated or truncated).
  StepResult step(const std::array<float, 2>& action);

  // The top camera as uint8 [H, W, 3] (RGB): a frame of a rollout video.
  torch::Tensor render() const;
  // What the scripted expert (the dataset's demonstrator) would do now.
  std::array<float, 2> expert_action() const;

  bool is_success() const;        // block centre within kGoalRadius of the goal centre
  double final_distance() const;  // block-goal distance now (at the end of an episode: its final one)
  int steps() const;              // steps taken in this episode
  bool episode_over() const { return over_; }
  uint64_t episodes_started() const { return episodes_started_; }
  const World& world() const;
  const PushEnvOptions& options() const { return options_; }

 private:
  void require_started(const char* what) const;
  Observation observe() const;

  PushEnvOptions options_;
  World world_{};
  bool started_ = false;
  bool over_ = false;
  int steps_ = 0;
  uint64_t episodes_started_ = 0;
};

}  // namespace lrhost::sim
