// Unit tests of the pushing task's evaluation environment (host/sim/push_env) and rollout videos
// (host/sim/rollout_video): starts that depend only on the episode's seed, success / termination /
// truncation, reward = progress toward the goal, action clipping, the scripted expert's success rate,
// errors naming the option or step, and, frame by frame, that replaying a dataset episode in the env
// gives exactly the dataset's states and camera images as the LeRobot loader delivers them.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <string>

#include "host/data/lerobot_dataset.hpp"
#include "host/data/synthetic_push.hpp"
#include "host/data/video/video_reader.hpp"
#include "host/sim/push_env.hpp"
#include "host/sim/rollout_video.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::contains;

using namespace lrhost;
using sim::PushEnv;
using sim::PushEnvOptions;

using lrhost::test::error_of;

namespace {
#define CHECK_HAS(text, part) CHECK_MESSAGE(contains(text, part), "'" << (part) << "' not in: " << (text))

bool same(const sim::Observation& a, const sim::Observation& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, tensor] : a)
    if (!b.count(key) || !tensor.equal(b.at(key))) return false;
  return true;
}

PushEnvOptions options_with_seed(uint64_t seed) {
  PushEnvOptions options;
  options.seed = seed;
  return options;
}

// A start in the middle of the square, away from the walls, with the block out of the agent's way.
sim::World central_world() {
  return sim::World{{0.5f, 0.5f}, {0.8f, 0.2f}, {0.2f, 0.8f}};
}
}  // namespace

TEST_CASE("push env: observations have the dataset item's layout") {
  PushEnvOptions options;
  options.image_size = 32;
  options.second_camera = true;
  PushEnv env(options);
  sim::Observation observation = env.reset();
  CHECK(observation.size() == 3);
  const torch::Tensor& state = observation.at("observation.state");
  CHECK((state.sizes() == torch::IntArrayRef{6}));
  CHECK((state.scalar_type() == torch::kFloat));
  const sim::World& world = env.world();
  CHECK(state[0].item<float>() == world.agent[0]);
  CHECK(state[3].item<float>() == world.block[1]);
  CHECK(state[5].item<float>() == world.goal[1]);
  for (const char* camera : {"observation.images.top", "observation.images.wrist"}) {
    CAPTURE(camera);
    const torch::Tensor& image = observation.at(camera);
    CHECK((image.sizes() == torch::IntArrayRef{3, 32, 32}));
    CHECK((image.scalar_type() == torch::kFloat));
    CHECK(image.min().item<float>() >= 0.0f);
    CHECK(image.max().item<float>() <= 1.0f);
  }
  // render() is the top camera as uint8 HWC; the observation is the same frame as CHW / 255
  torch::Tensor frame = env.render();
  CHECK((frame.sizes() == torch::IntArrayRef{32, 32, 3}));
  CHECK((frame.scalar_type() == torch::kByte));
  CHECK(frame.permute({2, 0, 1}).to(torch::kFloat).div(255.0).equal(observation.at("observation.images.top")));
  // without the second camera there is no wrist key
  PushEnv top_only(PushEnvOptions{});
  CHECK(top_only.reset().count("observation.images.wrist") == 0);
}

TEST_CASE("push env: an episode's start depends only on its seed") {
  PushEnv a(options_with_seed(5)), b(options_with_seed(5)), c(options_with_seed(6)), d(options_with_seed(99));
  sim::Observation first = a.reset();
  CHECK(same(first, b.reset()));
  CHECK(!same(first, d.reset()));
  // episode 1 of seed 5 is episode 0 of seed 6, and reset(seed) starts that same episode anywhere
  sim::Observation second = a.reset();
  CHECK(same(second, c.reset()));
  CHECK(same(second, d.reset(6)));
  CHECK(!same(first, second));
  CHECK(a.episodes_started() == 2);
  // a start is never solved and the agent is off the block
  for (uint64_t seed = 0; seed < 50; ++seed) {
    PushEnv env(options_with_seed(seed));
    env.reset();
    CHECK(sim::block_goal_distance(env.world()) >= 0.25f);
    CHECK(!env.is_success());
    CHECK(env.steps() == 0);
  }
}

TEST_CASE("push env: reward is progress toward the goal; success terminates") {
  PushEnv env(options_with_seed(52));  // the expert solves every start (see the success-rate test)
  env.reset();
  const double start_distance = env.final_distance();
  double total_reward = 0;
  bool terminated = false, truncated = false;
  while (!terminated && !truncated) {
    std::array<float, 2> action = env.expert_action();
    double before = env.final_distance();
    sim::StepResult result = env.step(action);
    CHECK(result.reward == doctest::Approx(before - env.final_distance()).epsilon(1e-12));
    total_reward += result.reward;
    terminated = result.terminated, truncated = result.truncated;
    CHECK(result.terminated == env.is_success());
  }
  CHECK(terminated);
  CHECK(!truncated);
  CHECK(env.final_distance() < sim::kGoalRadius);
  CHECK(total_reward == doctest::Approx(start_distance - env.final_distance()).epsilon(1e-9));
  CHECK(total_reward > 0.18);  // starts are at least 0.25 from the goal, success is within 0.07
  CHECK(env.episode_over());
  const int steps = env.steps();
  CHECK_HAS(error_of<util::DataError>([&] {
              env.step({0.0f, 0.0f});
            }),
            "step " + std::to_string(steps + 1) + " after the episode ended (it terminated");
  // the next reset starts a fresh episode
  env.reset();
  CHECK(env.steps() == 0);
  CHECK(!env.episode_over());
}

TEST_CASE("push env: max_steps truncates") {
  PushEnvOptions options;
  options.max_steps = 3;
  PushEnv env(options);
  env.reset();
  for (int step = 1; step <= 3; ++step) {
    sim::StepResult result = env.step({0.0f, 0.0f});
    CHECK(result.reward == 0.0);  // standing still makes no progress
    CHECK(!result.terminated);
    CHECK(result.truncated == (step == 3));
  }
  CHECK(env.steps() == 3);
  CHECK_HAS(error_of<util::DataError>([&] {
              env.step({0.0f, 0.0f});
            }),
            "step 4 after the episode ended (it was truncated at max_steps = 3)");
}

TEST_CASE("push env: actions faster than kMaxSpeed are clipped to it, keeping their direction") {
  PushEnv env(PushEnvOptions{});
  env.reset_to(central_world());
  env.step({1.0f, 0.0f});
  CHECK(env.world().agent[0] == doctest::Approx(0.5f + sim::kMaxSpeed));
  CHECK(env.world().agent[1] == 0.5f);
  env.reset_to(central_world());
  env.step({-3.0f, -4.0f});  // norm 5 -> 0.06 along (-0.6, -0.8)
  CHECK(env.world().agent[0] == doctest::Approx(0.5f - 0.6f * sim::kMaxSpeed));
  CHECK(env.world().agent[1] == doctest::Approx(0.5f - 0.8f * sim::kMaxSpeed));
  env.reset_to(central_world());
  env.step({3e38f, 3e38f});  // huge but finite: still clipped along its direction
  CHECK(env.world().agent[0] == doctest::Approx(0.5f + std::sqrt(0.5f) * sim::kMaxSpeed));
  CHECK(env.world().agent[1] == doctest::Approx(0.5f + std::sqrt(0.5f) * sim::kMaxSpeed));
  env.reset_to(central_world());
  env.step({0.01f, -0.02f});  // slow enough: taken as given
  CHECK(env.world().agent[0] == 0.5f + 0.01f);
  CHECK(env.world().agent[1] == 0.5f - 0.02f);
}

namespace {
// How many of `count` episodes, of seeds first .. first + count - 1, the scripted expert solves within
// max_steps = 80 (the dataset's longest episode).
int expert_successes(uint64_t first, int count) {
  PushEnvOptions options;
  options.image_size = 16;
  PushEnv env(options);
  int successes = 0;
  for (int episode = 0; episode < count; ++episode) {
    env.reset(first + episode);
    bool over = false;
    while (!over) {
      sim::StepResult result = env.step(env.expert_action());
      over = result.terminated || result.truncated;
    }
    successes += env.is_success() ? 1 : 0;
  }
  return successes;
}
}  // namespace

// The expert is the dataset's demonstrator (lrhost_push2d_v2), and closed-loop evaluation can only
// tell a trained policy from a baseline if the expert itself solves the task. This pins its measured
// success on the dataset's first starts (seeds 0..199) and on the evaluation's (episode e of an
// evaluation is seed 100000 + e), so a change to the simulation or the expert cannot go unnoticed.
TEST_CASE("push env: the scripted expert solves the task") {
  const int dataset_starts = expert_successes(0, 200);
  const int evaluation_starts = expert_successes(100000, 50);
  MESSAGE("expert success: " << dataset_starts << " of 200 starts (seeds 0..199), " << evaluation_starts
                             << " of 50 (seeds 100000..100049)");
  CHECK(dataset_starts == 200);
  CHECK(evaluation_starts == 50);
}

// The physics of a push: the block moves only when the agent's disc runs into it, away from the agent.
TEST_CASE("push env: the agent pushes the block, never drags it") {
  // Agent left of the block, the disc 0.03 from its left side: a step right by 0.05 pushes the block
  // right by 0.02 (just enough to touch again), straight along the line of centres.
  const sim::World start{{0.36f, 0.5f}, {0.5f, 0.5f}, {0.8f, 0.8f}};
  PushEnv env(PushEnvOptions{});
  env.reset_to(start);
  env.step({0.05f, 0.0f});
  CHECK(env.world().agent[0] == doctest::Approx(0.41f));
  CHECK(env.world().block[0] == doctest::Approx(0.41f + sim::kAgentRadius + sim::kBlockHalf));
  CHECK(env.world().block[1] == 0.5f);
  // Moving away, or sideways and away, leaves the block where it is (the old step dragged it).
  const sim::World pushed = env.world();
  env.step({-0.05f, 0.0f});
  CHECK(env.world().block[0] == pushed.block[0]);
  CHECK(env.world().block[1] == pushed.block[1]);
  env.reset_to(pushed);
  env.step({-0.02f, 0.05f});
  CHECK(env.world().block[0] == pushed.block[0]);
  CHECK(env.world().block[1] == pushed.block[1]);
  // A diagonal hit on the corner moves the block away from the agent, along the line of centres.
  env.reset_to(sim::World{{0.40f, 0.40f}, {0.5f, 0.5f}, {0.8f, 0.2f}});
  env.step({0.01f, 0.01f});
  CHECK(env.world().block[0] > 0.5f);
  CHECK(env.world().block[0] - 0.5f == doctest::Approx(env.world().block[1] - 0.5f));
  // A block against the wall stays in the square and stops the agent instead of overlapping it.
  env.reset_to(sim::World{{0.78f, 0.5f}, {1.0f - sim::kBlockHalf, 0.5f}, {0.2f, 0.2f}});
  env.step({0.06f, 0.0f});
  CHECK(env.world().block[0] == doctest::Approx(1.0f - sim::kBlockHalf));
  CHECK(env.world().block[0] - env.world().agent[0] >= doctest::Approx(sim::kAgentRadius + sim::kBlockHalf));
}

TEST_CASE("push env: errors name the option, the step or what is missing") {
  PushEnvOptions options;
  options.max_steps = 0;
  CHECK_HAS(error_of<util::ConfigError>([&] { PushEnv env(options); }), "max_steps must be >= 1, got 0");
  options = {};
  options.image_size = 15;
  CHECK_HAS(error_of<util::ConfigError>([&] { PushEnv env(options); }),
            "image_size must be an even number >= 16, got 15");
  options.image_size = 8;
  CHECK_HAS(error_of<util::ConfigError>([&] { PushEnv env(options); }),
            "image_size must be an even number >= 16, got 8");

  PushEnv env(PushEnvOptions{});
  CHECK_HAS(error_of<util::DataError>([&] { env.step({0.0f, 0.0f}); }), "step() before reset()");
  CHECK_HAS(error_of<util::DataError>([&] { env.render(); }), "render() before reset()");
  CHECK_HAS(error_of<util::DataError>([&] { env.expert_action(); }), "expert_action() before reset()");
  env.reset();
  env.step({0.0f, 0.0f});
  CHECK_HAS(error_of<util::DataError>([&] {
              env.step({std::nanf(""), 0.0f});
            }),
            "the action of step 2 is not finite: [nan, 0.0");
  CHECK_HAS(error_of<util::DataError>([&] { env.step({0.0f, INFINITY}); }), "step 2 is not finite");
  CHECK(env.steps() == 1);  // a refused action leaves the episode where it was
}

TEST_CASE("push env: replaying dataset episodes gives the dataset's states and images exactly") {
  // PNG image columns are lossless, so the dataset holds exactly the rendered pixels.
  test::TempDir tmp("push_env_dataset");
  data::SyntheticPushOptions writer;
  writer.episodes = 4;
  writer.seed = 3;
  writer.image_size = 32;
  writer.cameras_as_images = true;
  writer.second_camera = true;
  data::write_synthetic_push(tmp / "push", writer);
  data::LeRobotDataset dataset(tmp / "push");
  data::ReadContext context;

  PushEnvOptions options;
  options.image_size = 32;
  options.second_camera = true;
  PushEnv env(options);
  int64_t compared = 0;
  for (const auto& episode : dataset.meta().episodes) {
    CAPTURE(episode.index);
    // The env starts from the episode's first state, then takes the dataset's actions. It ends an
    // episode at the goal radius while the dataset's expert episodes go on to half of it, so the
    // comparison covers each episode up to the env's success (or the whole episode).
    data::Sample first = dataset.get(episode.from_index, context);
    auto start = first.at("observation.state").accessor<float, 1>();
    sim::Observation observation =
        env.reset_to(sim::World{{start[0], start[1]}, {start[2], start[3]}, {start[4], start[5]}});
    for (int64_t row = episode.from_index; row < episode.to_index; ++row) {
      CAPTURE(row);
      data::Sample item = dataset.get(row, context);
      CHECK(observation.at("observation.state").equal(item.at("observation.state")));
      for (const char* camera : {"observation.images.top", "observation.images.wrist"}) {
        CAPTURE(camera);
        // the LeRobot loader's conversion of a camera frame: uint8 -> float32, / 255
        torch::Tensor loaded = item.at(camera).to(torch::kFloat).div_(255.0);
        CHECK(observation.at(camera).equal(loaded));
      }
      ++compared;
      // the env's expert is the dataset's demonstrator, action for action
      std::array<float, 2> expert = env.expert_action();
      torch::Tensor action = item.at("action");
      CHECK(expert[0] == action[0].item<float>());
      CHECK(expert[1] == action[1].item<float>());
      if (row + 1 == episode.to_index) break;
      sim::StepResult result = env.step({action[0].item<float>(), action[1].item<float>()});
      observation = std::move(result.observation);
      if (result.terminated || result.truncated) break;
    }
  }
  CHECK(compared >= dataset.size() / 2);
  MESSAGE("compared " << compared << " of " << dataset.size() << " dataset frames");
}

TEST_CASE("rollout video: frames are written as an mp4, folders created, errors name the file") {
  test::TempDir tmp("rollout_video");
  PushEnv env(PushEnvOptions{});
  env.reset();
  std::vector<torch::Tensor> frames{env.render()};
  for (int step = 0; step < 9; ++step) {
    env.step(env.expert_action());
    frames.push_back(env.render());
  }
  std::filesystem::path file = tmp / "videos/episode_0.mp4";
  CHECK(sim::write_rollout_video(file, torch::stack(frames), 10) == 10);
  data::VideoStreamInfo info = data::probe_video(file);
  CHECK(info.frame_count == 10);
  CHECK(info.width == 64);
  CHECK(info.height == 64);
  CHECK(info.fps == doctest::Approx(10.0));

  CHECK_HAS(error_of<util::DataError>([&] {
              sim::write_rollout_video(tmp / "a.mp4", torch::zeros({4, 64, 64, 3}), 10);
            }),
            "video '" + (tmp / "a.mp4").string() + "': frames must be a uint8 tensor [T, H, W, 3]");
  CHECK_HAS(error_of<util::DataError>([&] {
              sim::write_rollout_video(tmp / "b.mp4", torch::zeros({64, 64, 3}, torch::kByte), 10);
            }),
            "got Byte [64, 64, 3]");
  CHECK_HAS(error_of<util::ConfigError>([&] { sim::write_rollout_video(tmp / "c.mp4", torch::stack(frames), 0); }),
            "fps must be >= 1, got 0");
  CHECK(!std::filesystem::exists(tmp / "c.mp4"));
}
