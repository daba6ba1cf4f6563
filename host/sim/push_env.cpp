// The pushing task's evaluation environment; see push_env.hpp.
#include "host/sim/push_env.hpp"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "host/util/error.hpp"

namespace lrhost::sim {

namespace {
// The expert scales its actions to norm kMaxSpeed in float, which can land a rounding step above it;
// a margin this small leaves such actions bit for bit as they are (replaying the expert reproduces
// the dataset exactly) while still clipping anything meaningfully faster.
constexpr float kClipMargin = 1.0f + 1e-5f;

std::string show_action(const std::array<float, 2>& action) {
  return "[" + std::to_string(action[0]) + ", " + std::to_string(action[1]) + "]";
}

// A camera frame as the LeRobot loader delivers it: float32 [3, H, W] = uint8 value / 255.
torch::Tensor camera_chw(const torch::Tensor& hwc_uint8) {
  return hwc_uint8.permute({2, 0, 1}).to(torch::kFloat).div_(255.0).contiguous();
}
}  // namespace

PushEnv::PushEnv(PushEnvOptions options) : options_(options) {
  if (options_.max_steps < 1)
    throw util::ConfigError("push env: max_steps must be >= 1, got " + std::to_string(options_.max_steps));
  if (options_.image_size < 16 || options_.image_size % 2 != 0)
    throw util::ConfigError("push env: image_size must be an even number >= 16, got " +
                            std::to_string(options_.image_size));
}

Observation PushEnv::reset() {
  return reset(options_.seed + episodes_started_);
}

Observation PushEnv::reset(uint64_t episode_seed) {
  std::mt19937_64 rng(episode_seed);
  return reset_to(sample_world(rng));
}

Observation PushEnv::reset_to(const World& start) {
  world_ = start;
  started_ = true;
  over_ = false;
  steps_ = 0;
  ++episodes_started_;
  return observe();
}

StepResult PushEnv::step(const std::array<float, 2>& action) {
  const int step_number = steps_ + 1;  // 1-based, as a user counts the steps of an episode
  if (!started_) throw util::DataError("push env: step() before reset(); call reset() to start an episode");
  if (over_) {
    std::string how = is_success() ? "it terminated: the block reached the goal"
                                   : "it was truncated at max_steps = " + std::to_string(options_.max_steps);
    throw util::DataError("push env: step " + std::to_string(step_number) + " after the episode ended (" + how + ")",
                          "call reset() to start the next episode");
  }
  if (!std::isfinite(action[0]) || !std::isfinite(action[1]))
    throw util::DataError("push env: the action of step " + std::to_string(step_number) +
                          " is not finite: " + show_action(action));
  // Out-of-range actions are not errors: like the expert's, they are scaled to norm kMaxSpeed.
  std::array<float, 2> clipped = action;
  // In double, so that huge finite actions (1e38) keep their direction instead of overflowing.
  double norm = std::hypot(static_cast<double>(action[0]), static_cast<double>(action[1]));
  if (norm > static_cast<double>(kMaxSpeed * kClipMargin)) {
    double scale = kMaxSpeed / norm;
    clipped = {static_cast<float>(action[0] * scale), static_cast<float>(action[1] * scale)};
  }
  StepResult result;
  float before = block_goal_distance(world_);
  step_world(world_, clipped.data());
  steps_ = step_number;
  result.reward = static_cast<double>(before) - static_cast<double>(block_goal_distance(world_));
  result.terminated = is_success();
  result.truncated = !result.terminated && steps_ >= options_.max_steps;
  over_ = result.terminated || result.truncated;
  result.observation = observe();
  return result;
}

torch::Tensor PushEnv::render() const {
  require_started("render()");
  torch::Tensor frame = torch::empty({options_.image_size, options_.image_size, 3}, torch::kByte);
  render_top(world_, options_.image_size, frame.data_ptr<uint8_t>());
  return frame;
}

std::array<float, 2> PushEnv::expert_action() const {
  require_started("expert_action()");
  std::array<float, 2> action{};
  sim::expert_action(world_, action.data());
  return action;
}

bool PushEnv::is_success() const {
  require_started("is_success()");
  return block_goal_distance(world_) < kGoalRadius;
}

double PushEnv::final_distance() const {
  require_started("final_distance()");
  return block_goal_distance(world_);
}

int PushEnv::steps() const {
  return steps_;
}

const World& PushEnv::world() const {
  require_started("world()");
  return world_;
}

void PushEnv::require_started(const char* what) const {
  if (!started_)
    throw util::DataError(std::string("push env: ") + what + " before reset(); call reset() to start an episode");
}

Observation PushEnv::observe() const {
  const World& w = world_;
  std::vector<float> state{w.agent[0], w.agent[1], w.block[0], w.block[1], w.goal[0], w.goal[1]};
  Observation observation;
  observation["observation.state"] = torch::tensor(state, torch::kFloat);
  observation["observation.images.top"] = camera_chw(render());
  if (options_.second_camera) {
    torch::Tensor wrist = torch::empty({options_.image_size, options_.image_size, 3}, torch::kByte);
    render_wrist(w, options_.image_size, wrist.data_ptr<uint8_t>());
    observation["observation.images.wrist"] = camera_chw(wrist);
  }
  return observation;
}

}  // namespace lrhost::sim
