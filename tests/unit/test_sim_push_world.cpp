// Unit tests of the pushing task's simulation (host/sim/push_world) through its first user, the
// built-in dataset: the dataset's content (states, actions, episode lengths, tasks and every camera
// pixel, read back from lossless PNG columns) is pinned by digests, because the cache folder name
// lrhost_push2d_v2 promises an unchanged dataset: a change to the simulation, the expert or the
// cameras fails here and needs a new version in default_dataset() and new digests. The digests were
// recorded when the push physics and the expert were fixed (version 2).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "host/data/lerobot_dataset.hpp"
#include "host/data/synthetic_push.hpp"
#include "test_support.hpp"

using namespace lrhost;

namespace {
// FNV-1a over raw bytes: a compact digest of exact values (any change of one bit changes it).
struct Digest {
  uint64_t value = 1469598103934665603ull;
  void add(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    for (std::size_t i = 0; i < size; ++i) value = (value ^ bytes[i]) * 1099511628211ull;
  }
  void add(const torch::Tensor& tensor) {
    torch::Tensor contiguous = tensor.contiguous();
    add(contiguous.data_ptr(), contiguous.nbytes());
  }
  void add(const std::string& text) { add(text.data(), text.size()); }
};

struct DatasetDigests {
  uint64_t numbers, cameras;
};

// Digests of a written synthetic dataset: `numbers` covers the state and action columns, episode
// lengths and tasks; `cameras` every decoded camera frame of every episode.
DatasetDigests digest_synthetic(const data::SyntheticPushOptions& options) {
  test::TempDir tmp("sim_push_world");
  data::write_synthetic_push(tmp / "push", options);
  data::LeRobotDataset dataset(tmp / "push");
  Digest numbers, cameras;
  numbers.add(dataset.column("observation.state"));
  numbers.add(dataset.column("action"));
  for (const auto& episode : dataset.meta().episodes) {
    numbers.add(&episode.length, sizeof(episode.length));
    for (const std::string& task : episode.tasks) numbers.add(task);
  }
  data::ReadContext context;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    data::Sample item = dataset.get(i, context);
    cameras.add(item.at("observation.images.top"));
    if (options.second_camera) cameras.add(item.at("observation.images.wrist"));
  }
  return {numbers.value, cameras.value};
}
}  // namespace

TEST_CASE("sim: the built-in dataset's content is unchanged (default task, both cameras)") {
  data::SyntheticPushOptions options;  // seed 0, 64 px, 80 frames at most: the default dataset's start
  options.episodes = 6;
  options.cameras_as_images = true;
  options.second_camera = true;
  DatasetDigests digests = digest_synthetic(options);
  CHECK(digests.numbers == 12599642065316530087ull);
  CHECK(digests.cameras == 1155011554201028547ull);
}

TEST_CASE("sim: the built-in dataset's content is unchanged (other seed, size, length)") {
  data::SyntheticPushOptions options;
  options.episodes = 5;
  options.seed = 7;
  options.image_size = 32;
  options.max_episode_length = 10;  // most episodes end by length here (the expert needs ~16 steps)
  options.cameras_as_images = true;
  DatasetDigests digests = digest_synthetic(options);
  CHECK(digests.numbers == 4703977555785746680ull);
  CHECK(digests.cameras == 8692758153025586197ull);
}
