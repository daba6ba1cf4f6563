// Simulation, expert, rendering and writing of the built-in pushing dataset; see synthetic_push.hpp.
#include "host/data/synthetic_push.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <random>

#include "host/data/dataset_writer.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace fs = std::filesystem;

namespace {
constexpr float kAgentRadius = 0.05f, kBlockHalf = 0.06f, kGoalRadius = 0.07f, kMaxSpeed = 0.06f;

struct World {
  float agent[2], block[2], goal[2];
};

float clamp01(float v, float margin) { return std::clamp(v, margin, 1.0f - margin); }

// Expert: go to the point behind the block (opposite the goal), then push through it.
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

// Kinematic step: the agent moves; if it now overlaps the block, the block is pushed out along the
// agent's motion.
void step(World& w, const float action[2]) {
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

// Top-down camera: gray floor with a light gradient, green goal, blue block, red agent.
void render(const World& w, int size, uint8_t* hwc) {
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

// Second camera: a 2x zoomed view centred on the agent (what a wrist camera would see).
void render_wrist(const World& w, int size, uint8_t* hwc) {
  World shifted = w;
  for (float* point : {shifted.agent, shifted.block, shifted.goal})
    for (int axis = 0; axis < 2; ++axis) point[axis] = (point[axis] - w.agent[axis]) * 2.0f + 0.5f;
  render(shifted, size, hwc);
}
}  // namespace

int64_t write_synthetic_push(const fs::path& root, const SyntheticPushOptions& options) {
  if (options.episodes < 1) throw util::ConfigError("--episodes must be >= 1, got " + std::to_string(options.episodes));
  if (options.image_size < 16 || options.image_size % 2)
    throw util::ConfigError("--image-size must be an even number >= 16, got " + std::to_string(options.image_size));
  if (options.max_episode_length < 2) throw util::ConfigError("--max-length must be >= 2");
  const int64_t size = options.image_size;
  std::string camera_dtype = options.cameras_as_images ? "image" : "video";
  std::vector<WriterFeature> features{
      {"observation.state", "float32", {6}, {"agent_x", "agent_y", "block_x", "block_y", "goal_x", "goal_y"}},
      {"action", "float32", {2}, {"vx", "vy"}},
      {"observation.images.top", camera_dtype, {size, size, 3}, nullptr}};
  if (options.second_camera) features.push_back({"observation.images.wrist", camera_dtype, {size, size, 3}, nullptr});
  WriterOptions writer_options;
  writer_options.video = options.video;
  writer_options.robot_type = "lrhost_push2d";
  DatasetWriter writer(root, options.fps, features, writer_options);

  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<float> uniform(0.15f, 0.85f);
  int64_t frames = 0;
  for (int episode = 0; episode < options.episodes; ++episode) {
    World w{};
    do {
      for (float* point : {w.agent, w.block, w.goal}) point[0] = uniform(rng), point[1] = uniform(rng);
    } while (std::hypot(w.block[0] - w.goal[0], w.block[1] - w.goal[1]) < 0.25f ||
             std::hypot(w.block[0] - w.agent[0], w.block[1] - w.agent[1]) < 0.15f);
    std::vector<float> states, actions;
    std::vector<uint8_t> top, wrist;
    int length = 0;
    for (; length < options.max_episode_length; ++length) {
      float action[2];
      expert_action(w, action);
      states.insert(states.end(), {w.agent[0], w.agent[1], w.block[0], w.block[1], w.goal[0], w.goal[1]});
      actions.insert(actions.end(), {action[0], action[1]});
      top.resize(top.size() + size * size * 3);
      render(w, static_cast<int>(size), top.data() + top.size() - size * size * 3);
      if (options.second_camera) {
        wrist.resize(wrist.size() + size * size * 3);
        render_wrist(w, static_cast<int>(size), wrist.data() + wrist.size() - size * size * 3);
      }
      step(w, action);
      if (std::hypot(w.block[0] - w.goal[0], w.block[1] - w.goal[1]) < kGoalRadius * 0.5f && length >= 1) {
        ++length;
        break;
      }
    }
    EpisodeData data;
    data.values["observation.state"] = torch::from_blob(states.data(), {length, 6}, torch::kFloat).clone();
    data.values["action"] = torch::from_blob(actions.data(), {length, 2}, torch::kFloat).clone();
    data.values["observation.images.top"] = torch::from_blob(top.data(), {length, size, size, 3}, torch::kByte).clone();
    if (options.second_camera)
      data.values["observation.images.wrist"] = torch::from_blob(wrist.data(), {length, size, size, 3}, torch::kByte).clone();
    // Two phrasings by goal side exercise the task table.
    data.tasks = {w.goal[0] < 0.5f ? "push the blue block onto the green target on the left"
                                   : "push the blue block onto the green target on the right"};
    writer.add_episode(data);
    frames += length;
  }
  writer.finish();
  return frames;
}

fs::path default_dataset() {
  const char* cache_env = std::getenv("LRHOST_CACHE");
  const char* home = std::getenv("HOME");
  fs::path cache = cache_env && *cache_env ? fs::path(cache_env) : fs::path(home ? home : "/tmp") / ".cache" / "lrhost";
  // The folder name carries the generator version: change it whenever the task's output changes.
  fs::path root = cache / "datasets" / "lrhost_push2d_v1";
  if (fs::exists(root / "meta" / "info.json")) return root;
  fs::create_directories(root.parent_path());
  fs::path lock_path = root.parent_path() / "lrhost_push2d_v1.lock";
  int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) throw util::IoError("cannot create lock file " + lock_path.string());
  ::flock(fd, LOCK_EX);  // other ranks wait here while the first one writes
  try {
    if (!fs::exists(root / "meta" / "info.json")) {
      fs::path temporary = root.parent_path() / ("lrhost_push2d_v1.tmp" + std::to_string(::getpid()));
      spdlog::info("writing the built-in dataset to {} (once)", root.string());
      SyntheticPushOptions options;
      write_synthetic_push(temporary, options);
      if (fs::exists(root)) fs::rename(root, root.parent_path() / ("lrhost_push2d_v1.stale" + std::to_string(::getpid())));
      fs::rename(temporary, root);
    }
  } catch (...) {
    ::flock(fd, LOCK_UN);
    ::close(fd);
    throw;
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return root;
}

}  // namespace lrhost::data
