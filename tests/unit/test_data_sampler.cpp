// Unit tests of the episode-aware sampler and the batch loader: numpy SeedSequence and LeRobot's
// epoch permutation against values printed by numpy/torch in the venv, accelerate-style sharding
// (every sample once per epoch on 1-4 ranks, even batches), positions and sample-exact resume, and
// the loader's ordering, resume, bounded prefetch and error delivery.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <set>

#include "host/data/batch_loader.hpp"
#include "host/data/dataset_writer.hpp"
#include "host/data/episode_sampler.hpp"
#include "host/data/seed_sequence.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace lrhost::data;
using lrhost::test::remove_tree;

namespace {
EpisodeSampler make_sampler(std::vector<std::pair<int64_t, int64_t>> ranges, int64_t batch, int rank = 0, int world = 1,
                            uint64_t seed = 0, int64_t drop_first = 0, int64_t drop_last = 0) {
  SamplerOptions options;
  options.batch_size = batch;
  options.seed = seed;
  options.rank = rank;
  options.world_size = world;
  options.drop_first = drop_first;
  options.drop_last = drop_last;
  return EpisodeSampler(ranges, options);
}

// A small numeric-only dataset: episode lengths 7, 4, 9, 5; action = [global index, -index].
fs::path write_numeric_dataset(const std::string& name) {
  fs::path root = fs::temp_directory_path() / ("lrhost_test_sampler_" + name + "_" + std::to_string(::getpid()));
  remove_tree(root);
  DatasetWriter writer(root, 10, {{"action", "float32", {2}, nullptr}});
  int64_t index = 0;
  for (int64_t length : {7, 4, 9, 5}) {
    torch::Tensor ids = torch::arange(index, index + length, torch::kFloat);
    writer.add_episode({{{"action", torch::stack({ids, -ids}, 1)}}, {"task"}});
    index += length;
  }
  writer.finish();
  return root;
}
}  // namespace

TEST_CASE("seed_sequence_uint64 equals numpy's SeedSequence(...).generate_state(1, uint64)[0]") {
  // ~/.cache/lrhost/venv/bin/python -c "import numpy as np; print(int(np.random.SeedSequence([1000,3])
  //   .generate_state(1, dtype=np.uint64)[0]))" and likewise for the other entropy lists.
  CHECK(seed_sequence_uint64({0, 0}) == 15793235383387715774ull);
  CHECK(seed_sequence_uint64({1000, 3}) == 17543754877180970201ull);
  CHECK(seed_sequence_uint64({42, 1}) == 15658369528003122356ull);
  CHECK(seed_sequence_uint64({1099511627781ull, 7}) == 1028324612631124673ull);  // 2^40+5: two words
  CHECK(seed_sequence_uint64({0, 123456}) == 1768226439585778909ull);
}

TEST_CASE("the epoch order is LeRobot's: randperm seeded with SeedSequence([seed, epoch])") {
  // torch.randperm(10, generator=torch.Generator().manual_seed(<SeedSequence([1000,3])>)).tolist()
  auto sampler = make_sampler({{0, 10}}, 4, 0, 1, 1000);
  CHECK(sampler.epoch_order(3) == std::vector<int64_t>{4, 6, 8, 7, 5, 0, 1, 2, 3, 9});
  // First eight of torch.randperm(50000, ...<SeedSequence([0,0])>)
  auto big = make_sampler({{0, 50000}}, 4);
  auto order = big.epoch_order(0);
  CHECK(std::vector<int64_t>(order.begin(), order.begin() + 8) ==
        std::vector<int64_t>{31676, 3300, 38253, 21174, 14080, 19247, 39818, 22710});
  CHECK(big.epoch_order(1) != order);
  // Unshuffled order walks the episodes; drops remove frames at both ends of every episode.
  SamplerOptions plain;
  plain.shuffle = false;
  plain.drop_first = 1;
  plain.drop_last = 2;
  EpisodeSampler dropped({{0, 5}, {5, 8}, {8, 12}}, plain);
  CHECK(dropped.epoch_order(0) == std::vector<int64_t>{1, 2, 9});  // episode 1 (3 frames) is skipped
  CHECK_THROWS_AS(make_sampler({{0, 2}}, 1, 0, 1, 0, 1, 1), lrhost::util::ConfigError);
}

TEST_CASE("sharding across 1-4 ranks covers every sample once per epoch with even batches") {
  std::vector<std::pair<int64_t, int64_t>> ranges{{0, 7}, {7, 11}, {11, 20}, {20, 25}};
  for (int world : {1, 2, 3, 4}) {
    for (int64_t batch : {1, 3, 4, 8}) {
      CAPTURE(world);
      CAPTURE(batch);
      std::multiset<int64_t> seen;
      std::vector<int64_t> batches_per_rank;
      for (int rank = 0; rank < world; ++rank) {
        auto sampler = make_sampler(ranges, batch, rank, world, 7);
        auto batches = sampler.rank_batches(2, 0);
        batches_per_rank.push_back(static_cast<int64_t>(batches.size()));
        CHECK(static_cast<int64_t>(batches.size()) == sampler.batches_per_epoch());
        for (const auto& b : batches) {
          if (world > 1) CHECK(static_cast<int64_t>(b.size()) == batch);  // even_batches pads every batch
          seen.insert(b.begin(), b.end());
        }
      }
      for (int64_t row = 0; row < 25; ++row) CHECK(seen.count(row) >= 1);
      // Padding only repeats samples; without it every sample appears exactly once.
      int64_t total = 0;
      for (auto n : batches_per_rank) total += n;
      if (world == 1)
        CHECK(seen.size() == 25);
      else
        CHECK(seen.size() == static_cast<std::size_t>(total * batch));
      CHECK(seen.size() - 25 < static_cast<std::size_t>(world * batch));
    }
  }
  // Batch k of the epoch goes to rank k mod W.
  auto all = make_sampler(ranges, 3, 0, 1, 7).rank_batches(0, 0);
  auto rank1 = make_sampler(ranges, 3, 1, 2, 7).rank_batches(0, 0);
  CHECK(rank1[0] == all[1]);
  CHECK(rank1[1] == all[3]);
}

TEST_CASE("positions advance like LeRobot's compute_sampler_state and resume mid-epoch") {
  std::vector<std::pair<int64_t, int64_t>> ranges{{0, 25}};
  for (int world : {1, 2, 3}) {
    auto sampler = make_sampler(ranges, 4, 0, world, 3);
    for (int64_t step = 0; step < 20; ++step) {
      CAPTURE(step);
      CHECK(sampler.advance({0, 0}, step) == EpisodeSampler::position_for_step(step, 25, 4, world));
    }
  }
  // Resuming at a position yields exactly the remaining batches of the epoch.
  auto sampler = make_sampler(ranges, 4, 0, 1, 3);
  auto full = sampler.rank_batches(5, 0);
  auto position = sampler.advance({5, 0}, 2);
  CHECK(position == SamplerPosition{5, 8});
  auto rest = sampler.rank_batches(position.epoch, position.start_index);
  CHECK(rest == std::vector<std::vector<int64_t>>(full.begin() + 2, full.end()));
  CHECK(sampler.advance({5, 0}, static_cast<int64_t>(full.size())) == SamplerPosition{6, 0});
}

TEST_CASE("the loader delivers the sampler's batches in order, resumes exactly, and bounds prefetch") {
  fs::path root = write_numeric_dataset("order");
  auto dataset = std::make_shared<LeRobotDataset>(root);
  REQUIRE(dataset->size() == 25);
  LoaderOptions options;
  options.sampler.batch_size = 4;
  options.sampler.seed = 11;
  options.num_workers = 3;
  options.prefetch = 2;
  std::vector<std::vector<int64_t>> got;
  SamplerPosition after_five;
  {
    BatchLoader loader(dataset, options);
    for (int i = 0; i < 12; ++i) {  // crosses the epoch boundary (7 batches per epoch)
      Batch batch = loader.next();
      torch::Tensor index = batch.at("index");
      got.emplace_back(index.data_ptr<int64_t>(), index.data_ptr<int64_t>() + index.numel());
      CHECK(batch.at("action").select(1, 0).to(torch::kLong).equal(index));
      if (i == 4) after_five = loader.position();
    }
    // At most `prefetch` batches of 4 samples are ever held ahead.
    int64_t batch_bytes = 4 * (2 * 4 + 8 * 4 + 4 + 0);  // action f32[2], 4 int64 columns, timestamp f32
    CHECK(loader.stats().peak_resident_bytes <= 2 * batch_bytes);
    CHECK(loader.stats().batches == 12);
  }
  auto sampler = EpisodeSampler({{0, 7}, {7, 11}, {11, 20}, {20, 25}}, options.sampler);
  auto epoch0 = sampler.rank_batches(0, 0), epoch1 = sampler.rank_batches(1, 0);
  CHECK(got[0] == epoch0[0]);
  CHECK(got[6] == epoch0[6]);
  CHECK(got[7] == epoch1[0]);
  CHECK(after_five == SamplerPosition{0, 20});
  // A new loader at the saved position continues with the same batches (sample-exact resume).
  BatchLoader resumed(dataset, options, after_five);
  for (int i = 5; i < 12; ++i) {
    torch::Tensor index = resumed.next().at("index");
    CHECK(std::vector<int64_t>(index.data_ptr<int64_t>(), index.data_ptr<int64_t>() + index.numel()) == got[i]);
  }
  remove_tree(root);
}

TEST_CASE("a worker's error reaches next() as a DataError instead of hanging") {
  fs::path root = fs::temp_directory_path() / ("lrhost_test_sampler_video_" + std::to_string(::getpid()));
  remove_tree(root);
  {
    WriterOptions writer_options;
    writer_options.video.codec = "libx264";
    DatasetWriter writer(root, 10, {{"observation.images.top", "video", {32, 32, 3}, nullptr}}, writer_options);
    writer.add_episode({{{"observation.images.top", torch::zeros({6, 32, 32, 3}, torch::kByte)}}, {"task"}});
    writer.finish();
  }
  auto dataset = std::make_shared<LeRobotDataset>(root);
  // Damage the video after opening: the loader's workers hit it.
  fs::path video = root / "videos" / "observation.images.top" / "chunk-000" / "file-000.mp4";
  fs::resize_file(video, 100);
  LoaderOptions options;
  options.sampler.batch_size = 2;
  BatchLoader loader(dataset, options);
  CHECK_THROWS_WITH_AS(loader.next(), doctest::Contains("data loader"), lrhost::util::DataError);
  remove_tree(root);
}

TEST_CASE("loader options are checked") {
  fs::path root = write_numeric_dataset("options");
  auto dataset = std::make_shared<LeRobotDataset>(root);
  LoaderOptions options;
  options.num_workers = 0;
  CHECK_THROWS_AS(BatchLoader(dataset, options), lrhost::util::ConfigError);
  options.num_workers = 1;
  CHECK_THROWS_AS(BatchLoader(dataset, options, SamplerPosition{0, 26}), lrhost::util::ConfigError);
  options.sampler.rank = 2;
  options.sampler.world_size = 2;
  CHECK_THROWS_AS(BatchLoader(dataset, options), lrhost::util::ConfigError);
  remove_tree(root);
}
