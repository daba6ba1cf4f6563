// Simulation, expert and cameras of the pushing task; see push_world.hpp. The arithmetic is kept
// exactly as the dataset writer first had it: reordering one operation would change the dataset.
#include "host/sim/push_world.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>

namespace lrhost::sim {

namespace {
float clamp01(float v, float margin) {
  return std::clamp(v, margin, 1.0f - margin);
}
}  // namespace

World sample_world(std::mt19937_64& rng) {
  // libstdc++'s uniform_real_distribution keeps no state between draws, so a fresh one per call
  // draws exactly what one shared across calls would.
  std::uniform_real_distribution<float> uniform(0.15f, 0.85f);
  World w{};
  do {
    for (float* point : {w.agent, w.block, w.goal}) point[0] = uniform(rng), point[1] = uniform(rng);
  } while (std::hypot(w.block[0] - w.goal[0], w.block[1] - w.goal[1]) < 0.25f ||
           std::hypot(w.block[0] - w.agent[0], w.block[1] - w.agent[1]) < 0.15f);
  return w;
}

float block_goal_distance(const World& w) {
  return std::hypot(w.block[0] - w.goal[0], w.block[1] - w.goal[1]);
}

void expert_action(const World& w, float out[2]) {
  float to_goal[2] = {w.goal[0] - w.block[0], w.goal[1] - w.block[1]};
  float distance = std::hypot(to_goal[0], to_goal[1]) + 1e-6f;
  float direction[2] = {to_goal[0] / distance, to_goal[1] / distance};
  float standoff = kBlockHalf + kAgentRadius + 0.01f;
  float behind[2] = {w.block[0] - direction[0] * standoff, w.block[1] - direction[1] * standoff};
  // Agent relative to the block, split into "behind the block" (along) and sideways (lateral).
  float relative[2] = {w.agent[0] - w.block[0], w.agent[1] - w.block[1]};
  float along = -(relative[0] * direction[0] + relative[1] * direction[1]);
  float lateral[2] = {relative[0] + along * direction[0], relative[1] + along * direction[1]};
  // Blend continuously from "approach the point behind the block" to "push toward the goal" as the
  // agent lines up behind the block: a continuous expert is one a small policy can learn.
  float lateral_distance = std::hypot(lateral[0], lateral[1]);
  float aligned = std::clamp(along / standoff, 0.0f, 1.0f) * std::clamp(1.0f - lateral_distance / 0.05f, 0.0f, 1.0f);
  float target[2];
  for (int axis = 0; axis < 2; ++axis) {
    float approach = behind[axis] - w.agent[axis];
    float push = direction[axis] * kMaxSpeed - lateral[axis];
    target[axis] = (1.0f - aligned) * approach + aligned * push;
  }
  float norm = std::hypot(target[0], target[1]);
  float scale = norm > kMaxSpeed ? kMaxSpeed / norm : 1.0f;
  out[0] = target[0] * scale;
  out[1] = target[1] * scale;
}

void step_world(World& w, const float action[2]) {
  w.agent[0] = clamp01(w.agent[0] + action[0], kAgentRadius);
  w.agent[1] = clamp01(w.agent[1] + action[1], kAgentRadius);
  float dx = w.block[0] - w.agent[0], dy = w.block[1] - w.agent[1];
  float reach = kBlockHalf + kAgentRadius;
  if (std::abs(dx) < reach && std::abs(dy) < reach) {
    float norm = std::hypot(action[0], action[1]);
    if (norm > 1e-6f) {
      w.block[0] = clamp01(w.block[0] + action[0], kBlockHalf);
      w.block[1] = clamp01(w.block[1] + action[1], kBlockHalf);
    }
  }
}

void render_top(const World& w, int size, uint8_t* hwc) {
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      float px = (x + 0.5f) / size, py = (y + 0.5f) / size;
      uint8_t* p = hwc + (static_cast<std::size_t>(y) * size + x) * 3;
      uint8_t floor = static_cast<uint8_t>(90 + 60 * py);
      p[0] = p[1] = p[2] = floor;
      if (std::hypot(px - w.goal[0], py - w.goal[1]) < kGoalRadius) {
        p[0] = 40, p[1] = 200, p[2] = 60;
      }
      if (std::abs(px - w.block[0]) < kBlockHalf && std::abs(py - w.block[1]) < kBlockHalf) {
        p[0] = 40, p[1] = 70, p[2] = 220;
      }
      if (std::hypot(px - w.agent[0], py - w.agent[1]) < kAgentRadius) {
        p[0] = 230, p[1] = 40, p[2] = 40;
      }
    }
  }
}

void render_wrist(const World& w, int size, uint8_t* hwc) {
  World shifted = w;
  for (float* point : {shifted.agent, shifted.block, shifted.goal})
    for (int axis = 0; axis < 2; ++axis) point[axis] = (point[axis] - w.agent[axis]) * 2.0f + 0.5f;
  render_top(shifted, size, hwc);
}

}  // namespace lrhost::sim
