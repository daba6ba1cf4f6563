// The 2-D pushing task's simulation, shared by the built-in dataset's writer (host/data/
// synthetic_push) and the evaluation environment (push_env): an agent (red disc) pushes a block (blue
// square) onto a goal (green disc) in the unit square. Positions are in [0, 1] with y pointing down
// the image. Everything here is deterministic float arithmetic, so the same start and actions give
// the same states and pixels bit for bit (the dataset's cache folder name promises exactly that).
#pragma once
#include <cstdint>
#include <random>

namespace lrhost::sim {

inline constexpr float kAgentRadius = 0.05f;
inline constexpr float kBlockHalf = 0.06f;  // half the block's side
inline constexpr float kGoalRadius = 0.07f;
inline constexpr float kMaxSpeed = 0.06f;  // largest move per step (the action's norm)

struct World {
  float agent[2], block[2], goal[2];
};

// A random start: the three centres uniform in [0.15, 0.85]^2, redrawn until the block is at least
// 0.25 from the goal and 0.15 from the agent (so no episode starts solved or with the agent on the block).
World sample_world(std::mt19937_64& rng);

// Distance from the block's centre to the goal's centre.
float block_goal_distance(const World& w);

// The scripted expert's velocity command for `w` (norm at most kMaxSpeed): go to the point behind the
// block (opposite the goal), then push through it.
void expert_action(const World& w, float out[2]);

// One kinematic step: the agent moves by `action` (taken as given: callers clip it); if it then
// overlaps the block, the block moves by the same amount. Both stay inside the square.
void step_world(World& w, const float action[2]);

// Top-down camera, `size` x `size` RGB into `hwc` (size * size * 3 bytes): gray floor with a light
// gradient, green goal, blue block, red agent.
void render_top(const World& w, int size, uint8_t* hwc);

// Second camera: a 2x zoomed view centred on the agent (what a wrist camera would see).
void render_wrist(const World& w, int size, uint8_t* hwc);

}  // namespace lrhost::sim
