// Unit tests of dataset mixtures (host/data/mixture, the weighted sampler in episode_sampler): the
// merged numbering of episodes, frames and tasks as LeRobot's merge writes it, items served through
// rename maps, pooled stats equal to LeRobot's aggregate_stats (per span of dimensions when widths
// differ), padded state/action with their dimension masks, missing cameras, the left-out features,
// every configuration error naming the dataset and key, and the weighted sampler: shares within 3
// sigma over 10^5 draws, the same order after a resume and as the union of two ranks.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <set>

#include "host/data/batch_loader.hpp"
#include "host/data/data_options.hpp"
#include "host/data/dataset_writer.hpp"
#include "host/data/episode_sampler.hpp"
#include "host/data/mixture/mixture_dataset.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost;
using namespace lrhost::data;
namespace fs = std::filesystem;
using lrhost::test::contains;
using lrhost::test::error_of;
using lrhost::test::TempDir;
using nlohmann::json;

#define CHECK_HAS(text, part) CHECK_MESSAGE(contains(text, part), "'" << (part) << "' not in: " << (text))

namespace {

constexpr int kSide = 8;

struct SmallDataset {
  int id = 0;  // makes every value of this dataset distinct
  int fps = 10;
  int64_t state_width = 3, action_width = 2;
  std::vector<std::string> cameras{"observation.images.top"};
  std::vector<int64_t> lengths{5, 4, 6};
  std::vector<std::string> tasks{"pick", "place"};  // episode e does tasks[e % size]
  bool extra = false;                               // a feature only this dataset has
};

float value(int id, int e, int k, int64_t j) {
  return static_cast<float>(id * 1000 + e * 100 + k) + 0.01f * static_cast<float>(j);
}

fs::path write_dataset(const fs::path& root, const SmallDataset& d) {
  std::vector<WriterFeature> features{{"observation.state", "float32", {d.state_width}, nullptr},
                                      {"action", "float32", {d.action_width}, nullptr}};
  if (d.extra) features.push_back({"observation.extra", "float32", {1}, nullptr});
  for (const auto& camera : d.cameras) features.push_back({camera, "image", {kSide, kSide, 3}, nullptr});
  DatasetWriter writer(root, d.fps, features);
  for (int e = 0; e < static_cast<int>(d.lengths.size()); ++e) {
    const int64_t n = d.lengths[static_cast<std::size_t>(e)];
    EpisodeData episode;
    auto state = torch::empty({n, d.state_width}), action = torch::empty({n, d.action_width});
    for (int k = 0; k < n; ++k) {
      for (int64_t j = 0; j < d.state_width; ++j) state[k][j] = value(d.id, e, k, j);
      for (int64_t j = 0; j < d.action_width; ++j) action[k][j] = -value(d.id, e, k, j);
    }
    // A width-1 feature is a scalar per frame (LeRobot's shape [1]).
    if (d.action_width == 1) action = action.squeeze(-1);
    episode.values = {{"observation.state", state}, {"action", action}};
    if (d.extra) episode.values["observation.extra"] = torch::ones({n});
    for (std::size_t c = 0; c < d.cameras.size(); ++c)
      episode.values[d.cameras[c]] =
          torch::full({n, kSide, kSide, 3}, 10 * d.id + static_cast<int>(c) + 1, torch::kUInt8);
    episode.tasks = {d.tasks[static_cast<std::size_t>(e) % d.tasks.size()]};
    writer.add_episode(episode);
  }
  writer.finish();
  return root;
}

MixtureSpec spec_of(const json& mixture, const std::string& weighting = "", const std::string& stats = "pooled",
                    bool mixed_fps = false) {
  return mixture_spec_from_json(mixture, weighting, stats, mixed_fps);
}

std::string config_error(const json& mixture, const std::string& weighting = "", const std::string& stats = "pooled",
                         bool mixed_fps = false) {
  return error_of<util::ConfigError>([&] { MixtureDataset dataset(spec_of(mixture, weighting, stats, mixed_fps)); });
}

}  // namespace

TEST_CASE("mixture: two datasets numbered as LeRobot's merge numbers them, items served as each dataset's") {
  TempDir tmp("mixture");
  SmallDataset a{.id = 1};
  SmallDataset b{.id = 2, .lengths = {3, 7}, .tasks = {"place", "wipe"}};
  write_dataset(tmp / "a", a);
  write_dataset(tmp / "b", b);
  MixtureDataset mix(spec_of(json::array({{{"root", (tmp / "a").string()}}, {{"root", (tmp / "b").string()}}})));
  LeRobotDataset da(tmp / "a"), db(tmp / "b");

  CHECK(mix.spec().weighting == MixtureWeighting::frames);
  CHECK(mix.sampling_groups().group_weights.empty());  // frames: the plain concatenation
  CHECK(mix.sampling_groups().group_episodes == std::vector<int64_t>{3, 2});
  CHECK(mix.size() == 15 + 10);
  CHECK(mix.meta().info.total_episodes == 5);
  CHECK(mix.meta().tasks == std::vector<std::string>{"pick", "place", "wipe"});  // once each, first appearance
  CHECK(mix.members()[0].part.name == "a");
  CHECK(mix.members()[1].share == doctest::Approx(10.0 / 25.0));
  const Episode& fourth = mix.meta().episode(3);  // b's episode 0
  CHECK(fourth.from_index == 15);
  CHECK(fourth.length == 3);

  ReadContext context;
  for (int64_t i = 0; i < mix.size(); ++i) {
    Sample item = mix.get(i, context);
    const bool in_a = i < 15;
    Sample own = in_a ? da.get(i, context) : db.get(i - 15, context);
    CHECK(torch::equal(item.at("observation.state"), own.at("observation.state")));
    CHECK(torch::equal(item.at("action"), own.at("action")));
    CHECK(torch::equal(item.at("observation.images.top"), own.at("observation.images.top")));
    CHECK(item.at("index").item<int64_t>() == i);
    CHECK(item.at("frame_index").item<int64_t>() == own.at("frame_index").item<int64_t>());
    const int64_t episode = item.at("episode_index").item<int64_t>();
    CHECK(episode == own.at("episode_index").item<int64_t>() + (in_a ? 0 : 3));
    const std::string& task = (in_a ? da : db).meta().task(own.at("task_index").item<int64_t>());
    CHECK(mix.meta().task(item.at("task_index").item<int64_t>()) == task);
    CHECK(!item.count("action_dim_is_pad"));  // same widths: nothing padded
  }
  CHECK(torch::equal(mix.column("action"), torch::cat({da.column("action"), db.column("action")})));
  CHECK(torch::equal(mix.column("index"), torch::arange(25)));
  CHECK(mix.column("episode_index")[15].item<int64_t>() == 3);
  CHECK(mix.column("task_index")[24].item<int64_t>() == 2);  // b's "wipe"

  // Pooled stats: LeRobot's aggregate_stats over the datasets' stats.json, feature by feature.
  for (const std::string key : {"observation.state", "action", "observation.images.top"}) {
    FeatureStats expected = aggregate_stats({da.meta().stats->at(key), db.meta().stats->at(key)});
    const FeatureStats& pooled = mix.meta().stats->at(key);
    for (const std::string& name : expected.names())
      CHECK_MESSAGE(torch::equal(pooled.get(name), expected.get(name)), key << " " << name);
  }

  // Episodes in the mixture's numbering select across datasets.
  DatasetOptions some;
  some.episodes = std::vector<int64_t>{1, 4};
  MixtureDataset picked(spec_of(json::array({{{"root", (tmp / "a").string()}}, {{"root", (tmp / "b").string()}}})),
                        some);
  CHECK(picked.size() == 4 + 7);
  CHECK(picked.episode_indices() == std::vector<int64_t>{1, 4});
  CHECK(picked.get(4, context).at("episode_index").item<int64_t>() == 4);
  CHECK(picked.get(4, context).at("index").item<int64_t>() == 15 + 3);
  // A per-frame cache (SmolVLA's vision cache) is keyed by index over every member's frames, and by an
  // identity naming each member: another mixture's cache is not this one's.
  CHECK(picked.frame_index_count() == 25);
  CHECK(picked.identity() == "mixture:" + (tmp / "a").string() + ":" + (tmp / "b").string());
  CHECK(picked.identity() != da.identity());
  CHECK(da.frame_index_count() == 15);
  CHECK(mix.video_streams() == 0);  // PNG image cameras: no video decoders to keep open
}

TEST_CASE("mixture: opening reads each dataset's metadata only; a member's rows load at its first read") {
  TempDir tmp("mixture_lazy");
  write_dataset(tmp / "a", SmallDataset{.id = 1});
  write_dataset(tmp / "b", SmallDataset{.id = 2});
  // b's data file exists but is not parquet: only reading its rows can tell.
  const fs::path b_file = LeRobotDataset(tmp / "b").meta().data_file(LeRobotDataset(tmp / "b").meta().episode(0));
  { std::ofstream(b_file, std::ios::trunc) << "not a parquet file"; }
  CHECK_THROWS(LeRobotDataset(tmp / "b"));  // a plain open loads the rows at once
  const json both = json::array({{{"root", (tmp / "a").string()}}, {{"root", (tmp / "b").string()}}});
  MixtureDataset mix(spec_of(both));  // metadata only: opens
  CHECK(mix.size() == 30);
  ReadContext context;
  CHECK(mix.get(0, context).at("observation.state")[0].item<float>() == value(1, 0, 0, 0));
  const std::string error = error_of<util::Error>([&] { mix.get(20, context); });
  CHECK_HAS(error, b_file.string());
  // A missing data file is still an error at the open, naming the file.
  fs::remove(b_file);
  const std::string missing = config_error(both);
  CHECK_HAS(missing, "'b'");
  CHECK_HAS(missing, b_file.string());
  // Only the wanted columns are loaded; one left out by `keys` is an error, not a silent load.
  DatasetOptions some;
  some.keys = std::vector<std::string>{"action"};
  LeRobotDataset only_action(tmp / "a", some);
  CHECK(only_action.column("action").size(0) == 15);
  CHECK_HAS(error_of<util::DataError>([&] { only_action.column("observation.state"); }), "'keys' leave it out");
}

TEST_CASE("mixture: different cameras and widths become uniform per sample, stats pooled per span") {
  TempDir tmp("mixture_hetero");
  SmallDataset a{.id = 1, .cameras = {"observation.images.top", "observation.images.wrist"}, .extra = true};
  SmallDataset b{
      .id = 2, .state_width = 2, .action_width = 1, .cameras = {"observation.images.front"}, .lengths = {4, 4}};
  write_dataset(tmp / "a", a);
  write_dataset(tmp / "b", b);
  const json entries = json::array(
      {{{"root", (tmp / "a").string()}, {"name", "big"}},
       {{"root", (tmp / "b").string()}, {"rename_map", {{"observation.images.front", "observation.images.top"}}}}});
  DatasetOptions windows;
  windows.delta_timestamps = {{"action", {0.0, 0.1}}};
  MixtureDataset mix(spec_of(entries), windows);
  LeRobotDataset da(tmp / "a"), db(tmp / "b");

  CHECK(mix.padded_features() == std::map<std::string, int64_t>{{"action", 2}, {"observation.state", 3}});
  CHECK(mix.partial_cameras() == std::set<std::string>{"observation.images.wrist"});
  CHECK(mix.meta().info.find_feature("observation.extra") == nullptr);  // not in b: left out
  CHECK(mix.meta().info.feature("action").shape == std::vector<int64_t>{2});

  ReadContext context;
  Sample from_a = mix.get(0, context);
  CHECK(from_a.at("action_dim_is_pad").equal(torch::tensor({false, false})));
  CHECK(from_a.at("observation.images.wrist_padding_mask").item<bool>());
  CHECK(!from_a.count("observation.extra"));
  Sample from_b = mix.get(15 + 1, context);  // b's episode 0, frame 1
  Sample own = db.get(1, context);
  CHECK(from_b.at("action").sizes().vec() == std::vector<int64_t>{2, 2});  // [window, width]
  CHECK(torch::equal(from_b.at("action").narrow(-1, 0, 1), db.column("action").narrow(0, 1, 2).unsqueeze(-1)));
  CHECK(torch::equal(from_b.at("action").narrow(-1, 1, 1), torch::zeros({2, 1})));
  CHECK(from_b.at("action_dim_is_pad").equal(torch::tensor({false, true})));
  CHECK(from_b.at("observation.state_dim_is_pad").equal(torch::tensor({false, false, true})));
  CHECK(torch::equal(from_b.at("observation.state").narrow(0, 0, 2), own.at("observation.state")));
  CHECK(from_b.at("observation.state")[2].item<float>() == 0.0f);
  CHECK(torch::equal(from_b.at("observation.images.top"), own.at("observation.images.front")));  // renamed
  CHECK(!from_b.at("observation.images.wrist_padding_mask").item<bool>());
  CHECK(from_b.at("observation.images.wrist").sizes().vec() == std::vector<int64_t>{3, kSide, kSide});
  CHECK(from_b.at("observation.images.wrist").max().item<int>() == 0);
  CHECK(from_a.size() == from_b.size());  // the same keys: they collate

  // The first width's dimensions pool both datasets, the rest only the dataset that has them.
  const FeatureStats& pooled = mix.meta().stats->at("observation.state");
  const FeatureStats& sa = da.meta().stats->at("observation.state");
  const FeatureStats& sb = db.meta().stats->at("observation.state");
  FeatureStats a_first;  // b's stats are 2 wide: aggregate them with the first 2 of a's
  for (const std::string& name : sa.names())
    a_first.set(name, name == "count" ? sa.get(name) : sa.get(name).narrow(-1, 0, 2));
  FeatureStats both = aggregate_stats({a_first, sb});
  CHECK(torch::equal(pooled.get("mean").narrow(-1, 0, 2), both.get("mean")));
  CHECK(torch::equal(pooled.get("std").narrow(-1, 0, 2), both.get("std")));
  CHECK(torch::equal(pooled.get("max").narrow(-1, 2, 1), sa.get("max").narrow(-1, 2, 1)));
  CHECK(torch::equal(pooled.get("mean").narrow(-1, 2, 1),
                     sa.get("mean").narrow(-1, 2, 1).to(pooled.get("mean").dtype())));
  CHECK(torch::equal(pooled.get("count"), both.get("count")));
  CHECK(torch::equal(mix.column("action").narrow(0, 15, 8).narrow(-1, 1, 1), torch::zeros({8, 1})));
  CHECK(mix.meta().per_dataset_stats.empty());  // pooled: one set of stats
  CHECK(!from_a.count("dataset_index"));

  // Per-dataset stats: each sample names its dataset; each dataset's stats in the policy's names and
  // widths, a narrower one's padded dimensions neutral (mean 0, std 1, range -1..1).
  MixtureDataset per(spec_of(entries, "", "per_dataset"), windows);
  CHECK(per.get(0, context).at("dataset_index").item<int64_t>() == 0);
  CHECK(per.get(16, context).at("dataset_index").item<int64_t>() == 1);
  const auto& by_dataset = per.meta().per_dataset_stats;
  REQUIRE(by_dataset.size() == 2);
  CHECK(by_dataset[0].first == "big");
  CHECK(by_dataset[1].first == "b");
  CHECK(torch::equal(by_dataset[0].second.at("observation.state").get("mean"), sa.get("mean")));
  const FeatureStats& b_state = by_dataset[1].second.at("observation.state");
  CHECK(torch::equal(b_state.get("mean").narrow(-1, 0, 2), sb.get("mean")));
  CHECK(b_state.get("mean")[2].item<double>() == 0.0);
  CHECK(b_state.get("std")[2].item<double>() == 1.0);
  CHECK(b_state.get("min")[2].item<double>() == -1.0);
  CHECK(b_state.get("max")[2].item<double>() == 1.0);
  CHECK(torch::equal(b_state.get("count"), sb.get("count")));
  CHECK(by_dataset[1].second.at("action").get("mean").sizes().vec() == std::vector<int64_t>{2});  // width 1 -> 2
  // b has no wrist camera: its entry is the pooled one (the camera is masked for its samples anyway).
  CHECK(torch::equal(by_dataset[1].second.at("observation.images.wrist").get("mean"),
                     per.meta().stats->at("observation.images.wrist").get("mean")));
  CHECK(torch::equal(by_dataset[1].second.at("observation.images.top").get("mean"),
                     db.meta().stats->at("observation.images.front").get("mean")));  // renamed
}

TEST_CASE("mixture: bad entries are errors naming the dataset and the key") {
  TempDir tmp("mixture_errors");
  write_dataset(tmp / "a", SmallDataset{.id = 1});
  write_dataset(tmp / "slow", SmallDataset{.id = 2, .fps = 5});
  write_dataset(tmp / "big", SmallDataset{.id = 3});
  const std::string a = (tmp / "a").string();
  auto error = [](const std::function<void()>& f) { return error_of<util::ConfigError>(f); };

  CHECK_HAS(error([&] {
              spec_of(json::array({{{"root", (tmp / "missing").string()}}}));
            }),
            "missing' is not a LeRobot dataset");
  CHECK_HAS(error([&] { spec_of(json::array({{{"root", a}, {"repo_id", "me/a"}}})); }), "exactly one of 'repo_id'");
  CHECK_HAS(error([&] {
              spec_of(json::array({{{"root", a}, {"weight", 0}}}));
            }),
            "'weight' must be a number > 0, got 0");
  CHECK_HAS(error([&] { spec_of(json::array({{{"root", a}, {"weight", -2}}})); }), "dataset.mixture[1] (" + a + ")");
  CHECK_HAS(error([&] { spec_of(json::array({{{"root", a}, {"wieght", 2}}})); }), "wieght");
  CHECK_HAS(error([&] { spec_of(json::array({{{"root", a}}, {{"root", a}}})); }), "the name 'a' is taken");
  CHECK_HAS(error([&] { spec_of(json::array()); }), "is empty");
  CHECK_HAS(error([&] { spec_of(json::array({{{"root", a}, {"weight", 2}}}), "frames"); }), "gives weights");
  CHECK_HAS(error([&] { spec_of(json::array({{{"root", a}}}), "uniform"); }), "dataset.weighting = 'uniform'");
  CHECK_HAS(error([&] { spec_of(json::array({{{"root", a}}}), "", "mean"); }), "dataset.stats = 'mean'");
  CHECK_HAS(error([&] { spec_of(json("[{\"root\": ")); }), "not valid JSON");
  CHECK_HAS(error([&] { spec_of(json("@" + (tmp / "nothing.json").string())); }), "cannot read the mixture file");

  CHECK_HAS(config_error(json::array({{{"root", a}, {"rename_map", {{"observation.images.side", "x"}}}}})),
            "dataset.mixture 'a' (" + a + "): rename_map names 'observation.images.side'");
  CHECK_HAS(config_error(json::array({{{"root", a}}, {{"root", (tmp / "slow").string()}}})),
            "dataset.mixture 'slow' (" + (tmp / "slow").string() + ") records at 5 fps");
  CHECK_HAS(config_error(json::array({{{"root", a}, {"episodes", {7}}}})), "episodes lists 7");
  const std::string bad_name = config_error(json::array({{{"root", a}, {"name", "my data"}}}), "", "per_dataset");
  CHECK_HAS(bad_name, "'my data'");
  CHECK_HAS(bad_name, "file");
  // Mixed fps allowed: each dataset must serve the windows in seconds.
  DatasetOptions windows;
  windows.delta_timestamps = {{"action", {0.0, 0.1}}};
  CHECK_HAS(error_of<util::ConfigError>([&] {
              MixtureDataset m(
                  spec_of(json::array({{{"root", a}}, {{"root", (tmp / "slow").string()}}}), "", "pooled", true),
                  windows);
            }),
            "dataset.mixture 'slow'");
  windows.delta_timestamps = {{"action", {0.0, 0.2}}};
  MixtureDataset mixed(spec_of(json::array({{{"root", a}}, {{"root", (tmp / "slow").string()}}}), "", "pooled", true),
                       windows);
  CHECK(mixed.size() == 30);

  // The same list as JSON text and as a shared @file.
  const std::string text = "[{\"root\": \"" + a + "\", \"weight\": 3}, {\"root\": \"" + (tmp / "big").string() + "\"}]";
  MixtureSpec from_text = spec_of(json(text));
  CHECK(from_text.weighting == MixtureWeighting::given);
  CHECK(from_text.parts[0].weight == 3.0);
  CHECK(!from_text.parts[1].weight);
  lrhost::test::write_text(tmp / "mix.json", text);
  MixtureSpec from_file = spec_of(json("@" + (tmp / "mix.json").string()));
  CHECK(from_file.parts[1].name == "big");
  MixtureDataset given(from_file);
  CHECK(given.sampling_groups().group_weights == std::vector<double>{3.0, 1.0});
  CHECK(given.members()[0].share == doctest::Approx(0.75));
  MixtureDataset balanced(spec_of(json(text), "balanced"));
  CHECK(balanced.sampling_groups().group_weights == std::vector<double>{45.0, 15.0});
}

TEST_CASE(
    "mixture sampler: shares within 3 sigma over 10^6 draws, one order for every rank layout and after a resume") {
  // Three groups of 1, 2 and 3 episodes (sizes 20000, 30000, 50000 rows), weights 1 : 3 : 6.
  std::vector<std::pair<int64_t, int64_t>> ranges{{0, 20000},     {20000, 35000}, {35000, 50000},
                                                  {50000, 70000}, {70000, 80000}, {80000, 100000}};
  SamplingGroups groups{{1, 2, 3}, {1.0, 3.0, 6.0}};
  SamplerOptions options{.batch_size = 50, .seed = 7};
  EpisodeSampler sampler(ranges, options, groups);
  REQUIRE(sampler.num_samples() == 100000);
  // Ten epochs' draws (10^6): one epoch's 10^5 is itself one multinomial draw (epoch 0's group 2 is
  // 3.7 sigma off for this seed: torch's own multinomial gives the same counts), so the test pools them.
  std::vector<int64_t> order = sampler.epoch_order(0);
  std::vector<double> counts(3, 0);
  for (int64_t epoch = 0; epoch < 10; ++epoch)
    for (int64_t row : sampler.epoch_order(epoch)) counts[row < 20000 ? 0 : row < 50000 ? 1 : 2] += 1;
  const double n = 1000000;
  const std::vector<double> p{0.1, 0.3, 0.6};
  for (std::size_t g = 0; g < 3; ++g) {
    const double sigma = std::sqrt(n * p[g] * (1 - p[g]));
    CHECK_MESSAGE(std::abs(counts[g] - n * p[g]) < 3 * sigma,
                  "group " << g << ": " << counts[0] << " " << counts[1] << " " << counts[2]);
  }
  // Within a pass over a group no row repeats: group 0 gets ~10000 draws of its 20000 rows.
  std::set<int64_t> group0;
  for (int64_t row : order)
    if (row < 20000) CHECK(group0.insert(row).second);
  // Group 2 is drawn ~60000 times from 50000 rows: every row before any repeats.
  std::map<int64_t, int> seen;
  int64_t first_repeat = -1;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (order[k] < 50000) continue;
    if (seen[order[k]]++ && first_repeat < 0) first_repeat = static_cast<int64_t>(k);
  }
  int64_t distinct = 0;
  for (std::size_t k = 0; k < static_cast<std::size_t>(first_repeat); ++k) distinct += order[k] >= 50000;
  CHECK(distinct == 50000);
  CHECK(sampler.epoch_order(1) != order);  // each epoch its own draw
  CHECK(EpisodeSampler(ranges, options, groups).epoch_order(0) == order);

  // A resume at a position continues the same stream.
  auto batches = sampler.rank_batches(0, 0);
  auto resumed = sampler.rank_batches(0, 5 * 50);
  REQUIRE(resumed.size() + 5 == batches.size());
  for (std::size_t k = 0; k < resumed.size(); ++k) CHECK(resumed[k] == batches[k + 5]);
  // Two ranks split the one-rank stream batch by batch.
  SamplerOptions rank0 = options, rank1 = options;
  rank0.world_size = rank1.world_size = 2;
  rank1.rank = 1;
  auto b0 = EpisodeSampler(ranges, rank0, groups).rank_batches(0, 0);
  auto b1 = EpisodeSampler(ranges, rank1, groups).rank_batches(0, 0);
  REQUIRE(b0.size() + b1.size() == batches.size());
  for (std::size_t k = 0; k < b0.size(); ++k) {
    CHECK(b0[k] == batches[2 * k]);
    CHECK(b1[k] == batches[2 * k + 1]);
  }
  CHECK_HAS(error_of<util::ConfigError>([&] {
              EpisodeSampler(ranges, options, SamplingGroups{{1, 2, 3}, {1, 0, 1}});
            }),
            "> 0");
}

TEST_CASE("mixture loader: samples_by_group counts what next() returned, also from a resumed position") {
  TempDir tmp("mixture_counts");
  write_dataset(tmp / "a", SmallDataset{.id = 1});
  write_dataset(tmp / "b", SmallDataset{.id = 2, .lengths = {3, 7}});
  auto mix = std::make_shared<MixtureDataset>(spec_of(
      json::array({{{"root", (tmp / "a").string()}, {"weight", 1}}, {{"root", (tmp / "b").string()}, {"weight", 3}}})));
  LoaderOptions options;
  options.sampler = {.batch_size = 4, .seed = 5};
  options.num_workers = 2;
  BatchLoader loader(mix, options);
  std::vector<int64_t> expected(2, 0);
  for (int step = 0; step < 9; ++step) {  // 36 samples: past the 25-sample epoch
    Batch batch = loader.next();
    const auto index = batch.at("index");
    for (int64_t k = 0; k < index.size(0); ++k) ++expected[index[k].item<int64_t>() < 15 ? 0 : 1];
    CHECK(loader.samples_by_group() == expected);
  }
  // A loader started at the position reached counts from epoch 0 as well (the resumed run's view).
  BatchLoader resumed(mix, options, loader.position());
  CHECK(resumed.samples_by_group() == expected);
  CHECK(resumed.sampler().group_counts_until({0, 0}) == std::vector<int64_t>{0, 0});
  // One dataset has no groups: asking is an error, not a count of nothing.
  auto single = std::make_shared<LeRobotDataset>(tmp / "a");
  BatchLoader plain(single, options);
  CHECK_HAS(error_of<util::ConfigError>([&] { plain.samples_by_group(); }), "not a mixture");
}
