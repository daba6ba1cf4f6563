// Simulation, expert and cameras of the pushing task; see push_world.hpp. The dataset's content
// follows from this arithmetic bit for bit: any change here needs a new dataset version (the cache
// folder name in host/data/synthetic_push.cpp) and new pinned digests in tests/unit/test_sim_push_world.cpp.
#include "host/sim/push_world.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>

namespace lrhost::sim {

namespace {
// The expert's tuning: it goes around the block on a circle of kOrbitRadius (clear of the square's
// corners, kBlockHalf * sqrt(2) + kAgentRadius = 0.135, by a margin), moving at most kOrbitStep radians
// around per target; it blends into pushing as the agent's angle off "behind the block" falls from
// kAlignedFar to kAlignedNear; kSteerGain is the share of its sideways offset it corrects per step.
constexpr float kOrbitRadius = 0.17f;
constexpr float kOrbitStep = 0.6f;
constexpr float kAlignedFar = 0.5f;
constexpr float kAlignedNear = 0.2f;
constexpr float kSteerGain = 1.0f;

float clamp01(float v, float margin) {
  return std::clamp(v, margin, 1.0f - margin);
}

// Distance between the agent's and the block's centres at which the disc just touches the square,
// with the block in direction `unit` (a unit vector) from the agent: where the ray leaves the square
// grown by the agent's radius (a square with rounded corners).
float contact_distance(const float unit[2]) {
  constexpr float h = kBlockHalf, r = kAgentRadius;
  float major = std::max(std::abs(unit[0]), std::abs(unit[1]));
  float minor = std::min(std::abs(unit[0]), std::abs(unit[1]));
  float face = (h + r) / major;  // the disc touches a side of the square
  if (minor * face <= h) return face;
  // The disc touches a corner: |t * (major, minor) - (h, h)| = r, the larger root in t.
  float sum = major + minor;
  return h * sum + std::sqrt(std::max(h * h * sum * sum - (2.0f * h * h - r * r), 0.0f));
}

// Distance from the agent's centre to the block's, and the unit vector from the first to the second
// (+x when the centres coincide, which the push never lets happen).
float centre_line(const World& w, float unit[2]) {
  float dx = w.block[0] - w.agent[0], dy = w.block[1] - w.agent[1];
  float distance = std::hypot(dx, dy);
  unit[0] = distance > 1e-6f ? dx / distance : 1.0f;
  unit[1] = distance > 1e-6f ? dy / distance : 0.0f;
  return distance;
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
  float goal_distance = std::hypot(to_goal[0], to_goal[1]);
  if (goal_distance < 1e-6f) {  // the block is on the goal: nothing left to do
    out[0] = out[1] = 0.0f;
    return;
  }
  float direction[2] = {to_goal[0] / goal_distance, to_goal[1] / goal_distance};
  float side[2] = {-direction[1], direction[0]};
  // The agent in the block's frame: `back` along the side facing away from the goal, `lateral` across.
  float relative[2] = {w.agent[0] - w.block[0], w.agent[1] - w.block[1]};
  float back = -(relative[0] * direction[0] + relative[1] * direction[1]);
  float lateral = relative[0] * side[0] + relative[1] * side[1];
  float angle = std::atan2(lateral, back);  // 0: straight behind the block, +-pi: in front of it
  // Going around: head for a point on a circle that clears the block's corners, at most kOrbitStep
  // radians closer to "behind" than the agent is now, so the agent circles the block without touching it.
  float target_angle = angle - std::clamp(angle, -kOrbitStep, kOrbitStep);
  float around[2];
  for (int axis = 0; axis < 2; ++axis) {
    float on_circle = -direction[axis] * std::cos(target_angle) + side[axis] * std::sin(target_angle);
    around[axis] = w.block[axis] + kOrbitRadius * on_circle - w.agent[axis];
  }
  // Pushing: drive through the block toward the goal, slowing down to land it on the goal, while
  // steering sideways onto the goal-block line (the block moves along the agent-block line).
  float push_speed = std::min(kMaxSpeed, goal_distance);
  float push[2];
  for (int axis = 0; axis < 2; ++axis) push[axis] = direction[axis] * push_speed - side[axis] * lateral * kSteerGain;
  // Blend continuously from going around to pushing as the agent comes behind the block: a
  // continuous expert is one a small policy can learn.
  float pushing = std::clamp((kAlignedFar - std::abs(angle)) / (kAlignedFar - kAlignedNear), 0.0f, 1.0f);
  float target[2];
  for (int axis = 0; axis < 2; ++axis) target[axis] = (1.0f - pushing) * around[axis] + pushing * push[axis];
  float norm = std::hypot(target[0], target[1]);
  float scale = norm > kMaxSpeed ? kMaxSpeed / norm : 1.0f;
  out[0] = target[0] * scale;
  out[1] = target[1] * scale;
}

void step_world(World& w, const float action[2]) {
  w.agent[0] = clamp01(w.agent[0] + action[0], kAgentRadius);
  w.agent[1] = clamp01(w.agent[1] + action[1], kAgentRadius);
  // A push: if the disc now overlaps the square, the block slides away from the agent along the line
  // of their centres, just far enough to touch. Without overlap nothing moves the block.
  float unit[2];
  float distance = centre_line(w, unit);
  float touching = contact_distance(unit);
  if (distance >= touching) return;
  w.block[0] = clamp01(w.agent[0] + unit[0] * touching, kBlockHalf);
  w.block[1] = clamp01(w.agent[1] + unit[1] * touching, kBlockHalf);
  // A block held by a wall stops the agent instead: it backs out along the (new) line of centres.
  distance = centre_line(w, unit);
  touching = contact_distance(unit);
  if (distance >= touching) return;
  w.agent[0] = clamp01(w.block[0] - unit[0] * touching, kAgentRadius);
  w.agent[1] = clamp01(w.block[1] - unit[1] * touching, kAgentRadius);
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

const char* task_instruction(const World& w) {
  return w.goal[0] < 0.5f ? "push the blue block onto the green target on the left"
                          : "push the blue block onto the green target on the right";
}

}  // namespace lrhost::sim
