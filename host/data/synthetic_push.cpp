// Writing of the built-in pushing dataset: episodes of the scripted expert in the simulation of
// host/sim/push_world, recorded frame by frame; see synthetic_push.hpp.
#include "host/data/synthetic_push.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <random>

#include "host/data/dataset_writer.hpp"
#include "host/sim/push_world.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace fs = std::filesystem;

int64_t write_synthetic_push(const fs::path& root, const SyntheticPushOptions& options) {
  if (options.episodes < 1) throw util::ConfigError("--episodes must be >= 1, got " + std::to_string(options.episodes));
  if (options.image_size < 16 || options.image_size % 2)
    throw util::ConfigError("--image-size must be an even number >= 16, got " + std::to_string(options.image_size));
  if (options.max_episode_length < 2) throw util::ConfigError("--max-length must be >= 2");
  if (options.extra_action_dims < 0 || options.extra_action_dims > 64)
    throw util::ConfigError("--extra-action-dims must be in 0..64, got " + std::to_string(options.extra_action_dims));
  const int64_t size = options.image_size;
  const int64_t action_width = 2 + options.extra_action_dims;
  std::string camera_dtype = options.cameras_as_images ? "image" : "video";
  nlohmann::json action_names = {"vx", "vy"};
  for (int k = 0; k < options.extra_action_dims; ++k) action_names.push_back("extra_" + std::to_string(k));
  std::vector<WriterFeature> features{
      {"observation.state", "float32", {6}, {"agent_x", "agent_y", "block_x", "block_y", "goal_x", "goal_y"}},
      {"action", "float32", {action_width}, action_names},
      {"observation.images.top", camera_dtype, {size, size, 3}, nullptr}};
  if (options.second_camera) features.push_back({"observation.images.wrist", camera_dtype, {size, size, 3}, nullptr});
  WriterOptions writer_options;
  writer_options.video = options.video;
  writer_options.robot_type = "lrhost_push2d";
  DatasetWriter writer(root, options.fps, features, writer_options);

  std::mt19937_64 rng(options.seed);  // one stream for all episodes' starts, drawn in order
  int64_t frames = 0;
  for (int episode = 0; episode < options.episodes; ++episode) {
    sim::World w = sim::sample_world(rng);
    std::vector<float> states, actions;
    std::vector<uint8_t> top, wrist;
    int length = 0;
    for (; length < options.max_episode_length; ++length) {
      float action[2];
      sim::expert_action(w, action);
      states.insert(states.end(), {w.agent[0], w.agent[1], w.block[0], w.block[1], w.goal[0], w.goal[1]});
      actions.insert(actions.end(), {action[0], action[1]});
      for (int k = 0; k < options.extra_action_dims; ++k)
        actions.push_back(std::sin(0.3f * static_cast<float>(length) + static_cast<float>(k + episode)));
      top.resize(top.size() + size * size * 3);
      sim::render_top(w, static_cast<int>(size), top.data() + top.size() - size * size * 3);
      if (options.second_camera) {
        wrist.resize(wrist.size() + size * size * 3);
        sim::render_wrist(w, static_cast<int>(size), wrist.data() + wrist.size() - size * size * 3);
      }
      sim::step_world(w, action);
      // The demonstrations go on to half the goal radius (the environment counts success at the
      // full radius), so they end with the block well inside the goal: a policy that imitates them
      // aims for the goal's centre, not its edge, and still succeeds when it lands a little off. The
      // expert reaches half the radius on every start it solves (a step or two after the full one).
      if (sim::block_goal_distance(w) < sim::kGoalRadius * 0.5f && length >= 1) {
        ++length;
        break;
      }
    }
    EpisodeData data;
    data.values["observation.state"] = torch::from_blob(states.data(), {length, 6}, torch::kFloat).clone();
    data.values["action"] = torch::from_blob(actions.data(), {length, action_width}, torch::kFloat).clone();
    data.values["observation.images.top"] = torch::from_blob(top.data(), {length, size, size, 3}, torch::kByte).clone();
    if (options.second_camera)
      data.values["observation.images.wrist"] =
          torch::from_blob(wrist.data(), {length, size, size, 3}, torch::kByte).clone();
    // Two phrasings by goal side exercise the task table.
    data.tasks = {sim::task_instruction(w)};
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
  fs::path root = cache / "datasets" / "lrhost_push2d_v2";
  if (fs::exists(root / "meta" / "info.json")) return root;
  fs::create_directories(root.parent_path());
  fs::path lock_path = root.parent_path() / "lrhost_push2d_v2.lock";
  int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) throw util::IoError("cannot create lock file " + lock_path.string());
  ::flock(fd, LOCK_EX);  // other ranks wait here while the first one writes
  try {
    if (!fs::exists(root / "meta" / "info.json")) {
      fs::path temporary = root.parent_path() / ("lrhost_push2d_v2.tmp" + std::to_string(::getpid()));
      spdlog::info("writing the built-in dataset to {} (once)", root.string());
      SyntheticPushOptions options;
      // The expert solves a start in about 17 frames, so 200 episodes give about as many frames
      // (3458) as version 1's 40 mostly unsolved 80-frame episodes did (3134): the recipes and
      // tests that train on this dataset keep their amount of data.
      options.episodes = 200;
      write_synthetic_push(temporary, options);
      if (fs::exists(root))
        fs::rename(root, root.parent_path() / ("lrhost_push2d_v2.stale" + std::to_string(::getpid())));
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
