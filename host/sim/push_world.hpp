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

// The task instruction of an episode (the dataset's meta/tasks): two phrasings, by the goal's side.
const char* task_instruction(const World& w);

// The scripted expert's velocity command for `w` (norm at most kMaxSpeed). It goes around the block
// on a circle clear of it to the point behind the block (opposite the goal), blending into a push
// toward the goal that steers the agent onto the goal-block line and slows down to land the block on
// the goal. It solves every start of seeds 0..199 and 100000..100049 within 80 steps (pinned in
// tests/unit/test_sim_push_env.cpp).
void expert_action(const World& w, float out[2]);

// One kinematic step: the agent moves by `action` (taken as given: callers clip it). If the agent's
// disc then overlaps the block's square, the block is pushed: it slides away from the agent along the
// line of their centres just far enough to touch it (never toward the agent; an agent that does not
// touch the block never moves it). Both stay inside the square; a block held by a wall stops the agent.
void step_world(World& w, const float action[2]);

// Top-down camera, `size` x `size` RGB into `hwc` (size * size * 3 bytes): gray floor with a light
// gradient, green goal, blue block, red agent.
void render_top(const World& w, int size, uint8_t* hwc);

// Second camera: a 2x zoomed view centred on the agent (what a wrist camera would see).
void render_wrist(const World& w, int size, uint8_t* hwc);

}  // namespace lrhost::sim
