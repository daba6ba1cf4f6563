// Unit tests of host/data/stats: per-episode stats, aggregation, stats.json I/O and normalization.
// The expected numbers of the stats tests come from LeRobot's own code, so that "matches LeRobot"
// is checked bit for bit rather than approximately: they were printed by running
// compute_stats.py of huggingface/lerobot HEAD 7427f31 under numpy 2.4.6
// (~/.cache/lrhost/venv/bin/python /tmp/stats_oracle/oracle.py, which exec's that file with its
// lerobot imports stubbed) on the same deterministic data that vec()/img() below build; the
// aggregates (kAgg*) were reprinted from LeRobot 0.6.1 (interop venv), whose quantile aggregation
// is a count-weighted mean instead of the envelope of older versions (per-episode values unchanged). The
// normalization tests use values worked out by hand from LeRobot's formulas.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/dataset_command.hpp"
#include "host/data/stats/feature_stats.hpp"
#include "host/data/stats/normalizer.hpp"
#include "host/data/stats/quantile_augment.hpp"
#include "host/data/synthetic_push.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::write_text;

namespace fs = std::filesystem;
using lrhost::data::aggregate_stats;
using lrhost::data::aggregate_stats_sequential;
using lrhost::data::compute_episode_stats;
using lrhost::data::DatasetStats;
using lrhost::data::FeatureStats;
using lrhost::data::NormMode;
using lrhost::util::ConfigError;
using lrhost::util::DataError;
using lrhost::util::IoError;

namespace {

struct ExpectedStat {
  const char* name;
  torch::ScalarType dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
};
using Expected = std::vector<ExpectedStat>;

// Every stat present with LeRobot's dtype, shape and exact value, and no other stat.
void check_exact(const FeatureStats& stats, const Expected& expected) {
  CHECK(stats.names().size() == expected.size());
  for (const auto& e : expected) {
    std::string stat_name = e.name;
    CAPTURE(stat_name);
    REQUIRE(stats.has(e.name));
    const torch::Tensor& t = stats.get(e.name);
    CHECK((t.scalar_type() == e.dtype));
    CHECK(t.sizes().vec() == e.shape);
    torch::Tensor flat = t.to(torch::kFloat64).contiguous().reshape({-1});
    REQUIRE(flat.numel() == static_cast<int64_t>(e.values.size()));
    for (size_t i = 0; i < e.values.size(); ++i) {
      CAPTURE(i);
      CHECK(flat[static_cast<int64_t>(i)].item<double>() == e.values[i]);
    }
  }
}

// The oracle's deterministic data (same formulas in oracle.py).
torch::Tensor vec(int64_t n, int64_t d, torch::ScalarType dtype = torch::kFloat32) {
  torch::Tensor a = torch::empty({n, d}, torch::kFloat64);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) a[i][j] = static_cast<double>((i * 7919 + j * 104729 + 13) % 1009) / 37.0 - 11.5;
  return a.to(dtype);
}

torch::Tensor img(int64_t n, int64_t c, int64_t h, int64_t w) {
  auto nn = torch::arange(n, torch::kInt64).view({n, 1, 1, 1});
  auto cc = torch::arange(c, torch::kInt64).view({1, c, 1, 1});
  auto hh = torch::arange(h, torch::kInt64).view({1, 1, h, 1});
  auto ww = torch::arange(w, torch::kInt64).view({1, 1, 1, w});
  auto v = (nn * 131 + cc * 71 + hh * 29 + ww * 17 + (nn * hh * ww).remainder(7)).remainder(256);
  return v.to(torch::kUInt8);
}

using lrhost::test::TempDir;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class E, class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected exception not thrown");
  return {};
}

// kVecA
const Expected kVecA = {
    {"min", torch::kFloat32, {3}, {-11.472972869873047, -11.472972869873047, -11.36486530303955}},
    {"max", torch::kFloat32, {3}, {15.689188957214355, 15.689188957214355, 15.662161827087402}},
    {"mean", torch::kFloat32, {3}, {2.139864444732666, 2.1356756687164307, 2.131486415863037}},
    {"std", torch::kFloat32, {3}, {7.920168399810791, 7.857807159423828, 7.834255218505859}},
    {"count", torch::kInt64, {1}, {200.0}},
    {"q01", torch::kFloat64, {3}, {-11.364324569702148, -11.364324569702148, -11.251351356506348}},
    {"q10", torch::kFloat64, {3}, {-8.903432846069336, -8.903432846069336, -8.791892051696777}},
    {"q50", torch::kFloat64, {3}, {2.042919158935547, 2.1515674591064453, 2.0405406951904297}},
    {"q90", torch::kFloat64, {3}, {13.016433715820312, 12.880622863769531, 12.878378868103027}},
    {"q99", torch::kFloat64, {3}, {15.477325439453125, 15.341514587402344, 15.44594669342041}},
};
// kVecB
const Expected kVecB = {
    {"min", torch::kFloat32, {1}, {-11.256756782531738}},
    {"max", torch::kFloat32, {1}, {15.229729652404785}},
    {"mean", torch::kFloat32, {1}, {2.0756757259368896}},
    {"std", torch::kFloat32, {1}, {7.950409412384033}},
    {"count", torch::kInt64, {1}, {50.0}},
    {"q01", torch::kFloat32, {1}, {-11.256756782531738}},
    {"q10", torch::kFloat64, {1}, {-9.577513694763184}},
    {"q50", torch::kFloat64, {1}, {2.0447559356689453}},
    {"q90", torch::kFloat64, {1}, {12.665837287902832}},
    {"q99", torch::kFloat64, {1}, {15.227080345153809}},
};
// kVecC
const Expected kVecC = {
    {"min", torch::kFloat32, {1}, {-11.5}},
    {"max", torch::kFloat32, {1}, {15.743243217468262}},
    {"mean", torch::kFloat32, {1}, {2.1367838382720947}},
    {"std", torch::kFloat32, {1}, {7.875323295593262}},
    {"count", torch::kInt64, {1}, {1000.0}},
    {"q01", torch::kFloat64, {1}, {-11.254810333251953}},
    {"q10", torch::kFloat64, {1}, {-8.792021751403809}},
    {"q50", torch::kFloat64, {1}, {2.14886474609375}},
    {"q90", torch::kFloat64, {1}, {13.018918991088867}},
    {"q99", torch::kFloat64, {1}, {15.476259231567383}},
};
// kVecD
const Expected kVecD = {
    {"min", torch::kFloat64, {2}, {-11.256756756756756, -11.04054054054054}},
    {"max", torch::kFloat64, {2}, {15.22972972972973, 15.445945945945947}},
    {"mean", torch::kFloat64, {2}, {1.616891891891892, 2.158108108108108}},
    {"std", torch::kFloat64, {2}, {7.927873793708505, 7.881165308377266}},
    {"count", torch::kInt64, {1}, {40.0}},
    {"q01", torch::kFloat64, {2}, {-11.256756756856756, -11.04054054064054}},
    {"q10", torch::kFloat64, {2}, {-9.577513513600833, -9.361297297384617}},
    {"q50", torch::kFloat64, {2}, {1.1495135135071948, 2.14972972972933}},
    {"q90", torch::kFloat64, {2}, {11.987783783859307, 12.882054054134693}},
    {"q99", torch::kFloat64, {2}, {15.227610810910795, 15.443827027127012}},
};
// kCamA
const Expected kCamA = {
    {"min", torch::kFloat32, {3, 1, 1}, {0.0, 0.0, 0.0}},
    {"max", torch::kFloat32, {3, 1, 1}, {1.0, 1.0, 1.0}},
    {"mean", torch::kFloat32, {3, 1, 1}, {0.5039058923721313, 0.4965542256832123, 0.49924182891845703}},
    {"std", torch::kFloat32, {3, 1, 1}, {0.291767418384552, 0.29134008288383484, 0.28731417655944824}},
    {"count", torch::kInt64, {1}, {100.0}},
    {"q01", torch::kFloat64, {3, 1, 1}, {0.007866666519563961, 0.007974999850871516, 0.00799999985040403}},
    {"q10", torch::kFloat64, {3, 1, 1}, {0.09804285674535927, 0.09808888902851179, 0.1018615377434778}},
    {"q50", torch::kFloat64, {3, 1, 1}, {0.5059818152225378, 0.4940200027765012, 0.4980749953026865}},
    {"q90", torch::kFloat64, {3, 1, 1}, {0.9058307308237298, 0.9019866464652266, 0.9018142828420431}},
    {"q99", torch::kFloat64, {3, 1, 1}, {0.9920444197644335, 0.9921333263122957, 0.9921166563345716}},
};
// kCamB
const Expected kCamB = {
    {"min", torch::kFloat32, {3, 1, 1}, {0.0, 0.0, 0.0}},
    {"max", torch::kFloat32, {3, 1, 1}, {1.0, 1.0, 1.0}},
    {"mean", torch::kFloat32, {3, 1, 1}, {0.4993216097354889, 0.5005842447280884, 0.49921298027038574}},
    {"std", torch::kFloat32, {3, 1, 1}, {0.28978732228279114, 0.2898608446121216, 0.2897850573062897}},
    {"count", torch::kInt64, {1}, {2.0}},
    {"q01", torch::kFloat64, {3, 1, 1}, {0.0078857141382554, 0.007975221089805433, 0.00788593735253694}},
    {"q10", torch::kFloat64, {3, 1, 1}, {0.09807543857916959, 0.09813306517121462, 0.09805892836145995}},
    {"q50", torch::kFloat64, {3, 1, 1}, {0.4981982622203518, 0.49819681402873495, 0.5018047411700677}},
    {"q90", torch::kFloat64, {3, 1, 1}, {0.9018606223901039, 0.9019224000509081, 0.9018555946340786}},
    {"q99", torch::kFloat64, {3, 1, 1}, {0.9920109778519349, 0.9921090045415178, 0.9920239712584252}},
};
// kAgg
const Expected kAgg = {
    {"min", torch::kFloat32, {3}, {-11.472972869873047, -11.472972869873047, -11.36486530303955}},
    {"max", torch::kFloat32, {3}, {15.689188957214355, 15.689188957214355, 15.662161827087402}},
    {"mean", torch::kFloat64, {3}, {2.207243032455444, 2.175783815383911, 2.14432409286499}},
    {"std", torch::kFloat64, {3}, {7.946181133082474, 7.885889404980708, 7.813207417203056}},
    {"count", torch::kInt64, {1}, {250.0}},
    {"q01", torch::kFloat64, {3}, {-11.034555877685547, -11.3276421585083, -11.18718098449707}},
    {"q10", torch::kFloat64, {3}, {-8.999975700378418, -8.942505111694336, -8.781749839782714}},
    {"q50", torch::kFloat64, {3}, {1.9786526107788085, 2.1098670196533202, 1.894434051513672}},
    {"q90", torch::kFloat64, {3}, {12.99615261077881, 12.895195121765136, 12.791140747070312}},
    {"q99", torch::kFloat64, {3}, {15.482827384948731, 15.381359786987305, 15.383445449829102}},
};
// kAggSeq
const Expected kAggSeq = {
    {"min", torch::kFloat32, {3}, {-11.472972869873047, -11.472972869873047, -11.36486530303955}},
    {"max", torch::kFloat32, {3}, {15.689188957214355, 15.689188957214355, 15.662161827087402}},
    {"mean", torch::kFloat64, {3}, {2.207243032455444, 2.175783815383911, 2.14432409286499}},
    {"std", torch::kFloat64, {3}, {7.946181133082473, 7.885889404980707, 7.8132074172030554}},
    {"count", torch::kInt64, {1}, {250.0}},
    {"q01", torch::kFloat64, {3}, {-11.034555877685547, -11.3276421585083, -11.18718098449707}},
    {"q10", torch::kFloat64, {3}, {-8.999975700378418, -8.942505111694336, -8.781749839782714}},
    {"q50", torch::kFloat64, {3}, {1.9786526107788085, 2.1098670196533202, 1.894434051513672}},
    {"q90", torch::kFloat64, {3}, {12.99615261077881, 12.895195121765136, 12.791140747070312}},
    {"q99", torch::kFloat64, {3}, {15.482827384948731, 15.381359786987305, 15.383445449829102}},
};
// kAggCam
const Expected kAggCam = {
    {"min", torch::kFloat32, {3, 1, 1}, {0.0, 0.0, 0.0}},
    {"max", torch::kFloat32, {3, 1, 1}, {1.0, 1.0, 1.0}},
    {"mean", torch::kFloat64, {3, 1, 1}, {0.5024935992864462, 0.4973814533307002, 0.5014397960442764}},
    {"std", torch::kFloat64, {3, 1, 1}, {0.29168821040511816, 0.2900894040242608, 0.2880644738633532}},
    {"count", torch::kInt64, {1}, {130.0}},
    {"q01", torch::kFloat64, {3, 1, 1}, {0.009663589534117025, 0.008853076660435303, 0.00885153824747238}},
    {"q10", torch::kFloat64, {3, 1, 1}, {0.09805604371241623, 0.09991452891722342, 0.1018704135866892}},
    {"q50", torch::kFloat64, {3, 1, 1}, {0.5032629312514997, 0.49498461785179815, 0.5026038392816373}},
    {"q90", torch::kFloat64, {3, 1, 1}, {0.9058467103290039, 0.9019551111742021, 0.9018571356765364}},
    {"q99", torch::kFloat64, {3, 1, 1}, {0.9929710868680738, 0.9921302487779465, 0.9930381907620821}},
};
// sample_indices(120)[:5] = [0, 1, 2, 4, 5]  sample_indices(1000) len 177 [0, 6, 11, 17] [993, 999]

// Stats with a distinct value per mode, hand-checkable: column 0 ordinary, column 1 a zero range.
FeatureStats hand_stats() {
  FeatureStats s;
  auto t = [](std::vector<double> v) { return torch::tensor(v, torch::kFloat64); };
  s.mean = t({1.0, 2.0});
  s.std = t({2.0, 0.0});
  s.min = t({0.0, 1.0});
  s.max = t({4.0, 1.0});
  s.quantiles["q01"] = t({0.5, 3.0});
  s.quantiles["q99"] = t({2.5, 3.0});
  s.quantiles["q10"] = t({1.0, -1.0});
  s.quantiles["q90"] = t({3.0, 1.0});
  s.count = torch::tensor({10}, torch::kInt64);
  return s;
}

double elem(const torch::Tensor& t, int64_t i, int64_t j) {
  return t.index({i, j}).item<double>();
}

}  // namespace

TEST_CASE("compute_episode_stats of vectors matches LeRobot bit for bit") {
  SUBCASE("float32 [200,3]: row-by-row float32 sums, histogram quantiles") {
    check_exact(compute_episode_stats(vec(200, 3), false), kVecA);
  }
  SUBCASE("float32 [50] gives shape [1] (pairwise sum, short block)") {
    check_exact(compute_episode_stats(vec(50, 1).reshape({50}), false), kVecB);
  }
  SUBCASE("float32 [1000] (pairwise sum split in halves)") {
    check_exact(compute_episode_stats(vec(1000, 1).reshape({1000}), false), kVecC);
  }
  SUBCASE("float64 stays float64") {
    check_exact(compute_episode_stats(vec(40, 2, torch::kFloat64), false), kVecD);
  }
}

TEST_CASE("compute_episode_stats basics by hand") {
  // [1,2,3,4]: mean 2.5, population std sqrt(1.25), count 4.
  auto s = compute_episode_stats(torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}), false);
  CHECK(s.mean.item<double>() == 2.5);
  CHECK(s.std.item<double>() == doctest::Approx(std::sqrt(1.25)).epsilon(1e-7));
  CHECK(s.min.item<double>() == 1.0);
  CHECK(s.max.item<double>() == 4.0);
  CHECK(s.count.item<int64_t>() == 4);
  CHECK((s.count.scalar_type() == torch::kInt64));
  CHECK(s.get("q50").item<double>() == doctest::Approx(2.0).epsilon(1e-3));

  // A single frame: std 0 and every quantile equal to the mean (LeRobot's _compute_basic_stats).
  auto one = compute_episode_stats(torch::tensor({{1.5f, -2.0f}}), false);
  CHECK(one.std.abs().sum().item<double>() == 0.0);
  CHECK(torch::equal(one.get("q01"), one.mean));
  CHECK(one.count.item<int64_t>() == 1);

  // Integer features are promoted to float64 before the stats (numpy result_type(int64, float32)).
  auto ints = compute_episode_stats(torch::arange(10, torch::kInt64), false);
  CHECK((ints.mean.scalar_type() == torch::kFloat64));
  CHECK(ints.mean.item<double>() == 4.5);

  CHECK_THROWS_AS(compute_episode_stats(torch::empty({0, 3}), false), DataError);
  CHECK_THROWS_AS(compute_episode_stats(torch::tensor(1.0), false), DataError);
}

TEST_CASE("compute_episode_stats of cameras: sub-sampling, down-scaling, per channel /255") {
  SUBCASE("120 frames → 100 sampled, stats [3,1,1] in [0,1]") {
    check_exact(compute_episode_stats(img(120, 3, 6, 5), true), kCamA);
  }
  SUBCASE("310x300 frames are down-scaled by 2 (count = sampled frames)") {
    check_exact(compute_episode_stats(img(2, 3, 300, 310), true), kCamB);
  }
  SUBCASE("constant frames") {
    auto s = compute_episode_stats(torch::full({4, 3, 2, 2}, 255, torch::kUInt8), true);
    CHECK(s.mean.sizes().vec() == std::vector<int64_t>{3, 1, 1});
    CHECK((s.mean.scalar_type() == torch::kFloat32));
    CHECK(torch::all(s.min == 1.0).item<bool>());
    CHECK(torch::all(s.mean == 1.0).item<bool>());
    CHECK(torch::all(s.std == 0.0).item<bool>());
    auto depth = compute_episode_stats(torch::full({4, 1, 2, 2}, 700, torch::kInt16), true, /*is_depth_map=*/true);
    CHECK(depth.mean.sizes().vec() == std::vector<int64_t>{1, 1, 1});
    CHECK(depth.mean.item<double>() == 700.0);
  }
  CHECK_THROWS_AS(compute_episode_stats(torch::zeros({3, 2, 2}, torch::kUInt8), true), DataError);
}

TEST_CASE("frame sub-sampling follows LeRobot's estimate_num_samples / sample_indices") {
  using lrhost::data::estimate_num_samples;
  using lrhost::data::sample_indices;
  CHECK(estimate_num_samples(5) == 5);
  CHECK(estimate_num_samples(300) == 100);
  CHECK(estimate_num_samples(500) == 105);   // int(500 ** 0.75)
  CHECK(estimate_num_samples(1000) == 177);  // figures from LeRobot's docstring
  CHECK(estimate_num_samples(10000) == 1000);
  CHECK(estimate_num_samples(20000) == 1681);
  auto a = sample_indices(120);
  REQUIRE(a.size() == 100);
  CHECK(std::vector<int64_t>(a.begin(), a.begin() + 5) == std::vector<int64_t>{0, 1, 2, 4, 5});
  CHECK(a.back() == 119);
  auto b = sample_indices(1000);
  REQUIRE(b.size() == 177);
  CHECK(std::vector<int64_t>(b.begin(), b.begin() + 4) == std::vector<int64_t>{0, 6, 11, 17});
  CHECK(b[175] == 993);
  CHECK(b[176] == 999);
  CHECK(sample_indices(1) == std::vector<int64_t>{0});
}

TEST_CASE("aggregate_stats matches LeRobot and the stats of the concatenation") {
  torch::Tensor a = vec(200, 3);
  using torch::indexing::Slice;
  std::vector<FeatureStats> eps{compute_episode_stats(a.index({Slice(0, 70)}), false),
                                compute_episode_stats(a.index({Slice(70, 200)}), false),
                                compute_episode_stats(a.index({Slice(150, 200)}), false)};
  auto agg = aggregate_stats(eps);
  check_exact(agg, kAgg);
  // LeRobot's writer folds episodes in one by one; that rounds differently in the last bits.
  check_exact(aggregate_stats_sequential(eps), kAggSeq);

  // Against the concatenated data (float64 reference): count-weighted mean, pooled variance.
  torch::Tensor all = torch::cat({a, a.index({Slice(150, 200)})}).to(torch::kFloat64);
  CHECK(agg.count.item<int64_t>() == 250);
  for (int64_t j = 0; j < 3; ++j) {
    CAPTURE(j);
    auto col = all.index({Slice(), j});
    CHECK(agg.mean[j].item<double>() == doctest::Approx(col.mean().item<double>()).epsilon(1e-6));
    CHECK(agg.std[j].item<double>() == doctest::Approx(col.std(/*unbiased=*/false).item<double>()).epsilon(1e-6));
    CHECK(agg.min[j].item<double>() == col.min().item<double>());
    CHECK(agg.max[j].item<double>() == col.max().item<double>());
    // Quantiles: the count-weighted mean of the episodes' estimates (LeRobot 0.6.1).
    for (const char* q : {"q01", "q10", "q50", "q90", "q99"}) {
      double w = 0;
      for (const auto& e : eps) w += e.get(q)[j].item<double>() * static_cast<double>(e.count.item<int64_t>());
      CHECK(agg.get(q)[j].item<double>() == doctest::Approx(w / 250.0).epsilon(1e-12));
    }
  }

  SUBCASE("cameras") {
    check_exact(aggregate_stats(
                    {compute_episode_stats(img(120, 3, 6, 5), true), compute_episode_stats(img(30, 3, 4, 4), true)}),
                kAggCam);
  }
  SUBCASE("a quantile missing from one episode is dropped") {
    auto partial = eps;
    partial[1].quantiles.erase("q50");
    auto out = aggregate_stats(partial);
    CHECK_FALSE(out.has("q50"));
    CHECK(out.has("q99"));
  }
  SUBCASE("bad inputs") {
    CHECK_THROWS_AS(aggregate_stats({}), DataError);
    auto bad = eps;
    bad[1].count = torch::tensor({1, 2}, torch::kInt64);
    CHECK(error_message<DataError>([&] { aggregate_stats(bad); }).find("count") != std::string::npos);
    bad = eps;
    bad[2].mean = torch::zeros({4});
    CHECK(error_message<DataError>([&] { aggregate_stats(bad); }).find("mean") != std::string::npos);
    bad = eps;
    bad[0].std = torch::Tensor();
    CHECK(error_message<DataError>([&] { aggregate_stats(bad); }).find("'std'") != std::string::npos);
  }
}

TEST_CASE("normalization modes by hand, zero range and eps") {
  FeatureStats s = hand_stats();
  torch::Tensor x = torch::tensor({{3.0, 2.0}, {1.0, 1.0}}, torch::kFloat64);

  // MEAN_STD: (x - mean) / (std + eps)
  auto m = lrhost::data::normalize(x, s, NormMode::MeanStd);
  CHECK(elem(m, 0, 0) == doctest::Approx(2.0 / (2.0 + 1e-8)).epsilon(1e-15));
  CHECK(elem(m, 0, 1) == 0.0);                           // x == mean with std 0 → 0
  CHECK(elem(m, 1, 1) == doctest::Approx(-1.0 / 1e-8));  // std 0: divided by eps alone
  CHECK(elem(m, 0, 0) != 1.0);                           // eps is added, not only used for zeros
  // Inverse has no eps: x * std + mean, so a zero-std feature comes back as its mean.
  auto mi = lrhost::data::unnormalize(m, s, NormMode::MeanStd);
  CHECK(elem(mi, 0, 0) == doctest::Approx(3.0).epsilon(1e-8));
  CHECK(elem(mi, 1, 1) == 2.0);

  // MIN_MAX: 2 (x - min) / (max - min) - 1; a zero range is replaced by eps.
  auto r = lrhost::data::normalize(x, s, NormMode::MinMax);
  CHECK(elem(r, 0, 0) == 0.5);
  CHECK(elem(r, 1, 0) == -0.5);
  CHECK(elem(r, 1, 1) == -1.0);  // x == min on a zero range → -1
  CHECK(elem(r, 0, 1) == doctest::Approx(2.0 / 1e-8 - 1.0));
  auto ri = lrhost::data::unnormalize(r, s, NormMode::MinMax);
  CHECK(torch::allclose(ri, x, 1e-12, 1e-12));

  // QUANTILES: q01/q99 (zero range in column 1); QUANTILE10: q10/q90.
  auto q = lrhost::data::normalize(x, s, NormMode::Quantiles);
  CHECK(elem(q, 0, 0) == 1.5);   // 2 (3 - 0.5) / 2 - 1
  CHECK(elem(q, 1, 0) == -0.5);  // 2 (1 - 0.5) / 2 - 1
  CHECK(elem(q, 1, 1) == doctest::Approx(2.0 * (1.0 - 3.0) / 1e-8 - 1.0));
  auto q10 = lrhost::data::normalize(x, s, NormMode::Quantile10);
  CHECK(elem(q10, 0, 0) == 1.0);  // 2 (3 - 1) / 2 - 1
  CHECK(elem(q10, 0, 1) == 2.0);  // 2 (2 + 1) / 2 - 1
  CHECK(torch::allclose(lrhost::data::unnormalize(q, s, NormMode::Quantiles), x, 1e-12, 1e-12));
  CHECK(torch::allclose(lrhost::data::unnormalize(q10, s, NormMode::Quantile10), x, 1e-12, 1e-12));

  // IDENTITY returns the input itself.
  CHECK(lrhost::data::normalize(x, s, NormMode::Identity).is_same(x));
  CHECK(lrhost::data::unnormalize(x, s, NormMode::Identity).is_same(x));
}

TEST_CASE("normalization in float32 rounds like LeRobot: stats cast to x's dtype, eps in float32") {
  FeatureStats s = hand_stats();
  torch::Tensor x = torch::tensor({{3.0f, 2.0f}}, torch::kFloat32);
  auto m = lrhost::data::normalize(x, s, NormMode::MeanStd);
  CHECK((m.scalar_type() == torch::kFloat32));
  CHECK(elem(m, 0, 0) == 1.0);  // 2 + 1e-8 rounds to 2 in float32
  auto r = lrhost::data::normalize(x, s, NormMode::MinMax);
  CHECK(elem(r, 0, 1) == static_cast<double>(2.0f / 1e-8f - 1.0f));
  // The stored stats are untouched (still float64, same values).
  CHECK((s.std.scalar_type() == torch::kFloat64));
  CHECK(s.std[1].item<double>() == 0.0);
  CHECK(s.max[1].item<double>() == 1.0);
  // Integer input is refused (LeRobot expects images already in float [0,1]).
  CHECK_THROWS_AS(lrhost::data::normalize(torch::ones({2, 2}, torch::kUInt8), s, NormMode::MeanStd), DataError);
}

TEST_CASE("normalize broadcasts over batch/time and camera dims, and round-trips") {
  torch::manual_seed(0);
  auto vs = compute_episode_stats(vec(200, 3), false);
  auto cs = compute_episode_stats(img(20, 3, 4, 5), true);
  torch::Tensor xv = torch::randn({4, 5, 3});
  torch::Tensor xc = torch::rand({4, 2, 3, 4, 5});
  for (NormMode mode : {NormMode::MeanStd, NormMode::MinMax, NormMode::Quantiles, NormMode::Quantile10}) {
    CAPTURE(lrhost::data::norm_mode_name(mode));
    auto nv = lrhost::data::normalize(xv, vs, mode);
    CHECK(nv.sizes() == xv.sizes());
    CHECK(torch::allclose(lrhost::data::unnormalize(nv, vs, mode), xv, 1e-4, 1e-5));
    auto nc = lrhost::data::normalize(xc, cs, mode);
    CHECK(nc.sizes() == xc.sizes());
    CHECK(torch::allclose(lrhost::data::unnormalize(nc, cs, mode), xc, 1e-4, 1e-5));
  }
  // Per channel: channel 1 of a camera batch uses mean[1]/std[1].
  auto n = lrhost::data::normalize(xc, cs, NormMode::MeanStd);
  float expected = (xc[1][0][1][2][3].item<float>() - cs.mean[1].item<float>()) / (cs.std[1].item<float>() + 1e-8f);
  CHECK(n[1][0][1][2][3].item<float>() == expected);
}

TEST_CASE("a missing stat is a DataError naming it") {
  FeatureStats s = hand_stats();
  s.quantiles.erase("q01");
  auto msg = error_message<DataError>([&] { lrhost::data::normalize(torch::zeros({1, 2}), s, NormMode::Quantiles); });
  CHECK(msg.find("q01") != std::string::npos);
  CHECK(msg.find("QUANTILES") != std::string::npos);
  CHECK_THROWS_AS(lrhost::data::unnormalize(torch::zeros({1, 2}), s, NormMode::Quantiles), DataError);
  CHECK(error_message<DataError>([&] { (void)s.get("q01"); }).find("q01") != std::string::npos);
  // Identity needs nothing.
  CHECK_NOTHROW(lrhost::data::normalize(torch::zeros({1, 2}), FeatureStats{}, NormMode::Identity));
}

TEST_CASE("normalization mode names") {
  for (NormMode mode :
       {NormMode::MeanStd, NormMode::MinMax, NormMode::Quantiles, NormMode::Quantile10, NormMode::Identity})
    CHECK(lrhost::data::parse_norm_mode(lrhost::data::norm_mode_name(mode)) == mode);
  CHECK(lrhost::data::norm_mode_name(NormMode::MeanStd) == "MEAN_STD");
  CHECK(lrhost::data::norm_mode_name(NormMode::Quantile10) == "QUANTILE10");
  auto msg = error_message<ConfigError>([] { lrhost::data::parse_norm_mode("mean_std"); });
  CHECK(msg.find("mean_std") != std::string::npos);
  for (const char* name : {"MEAN_STD", "MIN_MAX", "QUANTILES", "QUANTILE10", "IDENTITY"})
    CHECK(msg.find(name) != std::string::npos);
}

TEST_CASE("apply_imagenet_stats overwrites camera mean/std only") {
  DatasetStats stats;
  stats["observation.images.top"] = compute_episode_stats(img(10, 3, 4, 4), true);
  stats["observation.state"] = compute_episode_stats(vec(10, 2), false);
  auto state_mean = stats["observation.state"].mean.clone();
  lrhost::data::apply_imagenet_stats(stats, {"observation.images.top", "observation.images.wrist"});
  const auto& top = stats["observation.images.top"];
  CHECK(top.mean.sizes().vec() == std::vector<int64_t>{3, 1, 1});
  CHECK((top.mean.scalar_type() == torch::kFloat32));
  CHECK(top.mean[0][0][0].item<float>() == 0.485f);
  CHECK(top.std[2][0][0].item<float>() == 0.225f);
  CHECK(top.has("min"));
  CHECK(top.has("q99"));
  REQUIRE(stats.count("observation.images.wrist") == 1);  // created, like setdefault
  CHECK(stats["observation.images.wrist"].mean[1][0][0].item<float>() == 0.456f);
  CHECK_FALSE(stats["observation.images.wrist"].has("min"));
  CHECK(torch::equal(stats["observation.state"].mean, state_mean));
}

TEST_CASE("stats.json round trip") {
  TempDir dir;
  DatasetStats stats;
  stats["action"] = compute_episode_stats(vec(30, 2), false);
  stats["observation.images.top"] = compute_episode_stats(img(12, 3, 4, 4), true);
  stats["action"].extra["custom"] = torch::tensor({1.0, 2.0}, torch::kFloat64);
  fs::path file = dir.path / "meta" / "stats.json";
  lrhost::data::write_stats_json(file, stats);

  std::string text = read_text(file);
  CHECK(text.rfind("{\n    \"action\": {\n        \"min\": [\n            ", 0) == 0);  // indent=4, LeRobot's order
  CHECK(text.find("\"count\": [\n            30\n        ]") != std::string::npos);     // count stays an integer

  DatasetStats back = lrhost::data::read_stats_json(file);
  REQUIRE(back.size() == 2);
  for (const auto& [key, fs_in] : stats) {
    CAPTURE(key);
    const FeatureStats& fs_out = back.at(key);
    CHECK(fs_out.names() == fs_in.names());
    for (const auto& name : fs_in.names()) {
      CAPTURE(name);
      const auto& a = fs_in.get(name);
      const auto& b = fs_out.get(name);
      CHECK(b.sizes() == a.sizes());
      // JSON numbers are float64 on load (np.array of Python floats); count is int64.
      CHECK((b.scalar_type() == (name == "count" ? torch::kInt64 : torch::kFloat64)));
      CHECK(torch::equal(b, a.to(b.scalar_type())));
    }
  }
}

TEST_CASE("stats_from_json: scalars, integers, unknown stats") {
  auto s = lrhost::data::stats_from_json(
      nlohmann::json::parse(R"({"mean": 1.5, "count": [7], "min": [[1], [2]], "q05": [0.1], "note": [3]})"), "x");
  CHECK(s.mean.sizes().vec() == std::vector<int64_t>{1});  // np.atleast_1d
  CHECK((s.count.scalar_type() == torch::kInt64));
  CHECK(s.min.sizes().vec() == std::vector<int64_t>{2, 1});
  CHECK((s.min.scalar_type() == torch::kInt64));  // all-integer lists load as int64, like numpy
  CHECK(s.quantiles.count("q05") == 1);
  CHECK(s.extra.count("note") == 1);
  CHECK(lrhost::data::stats_to_json(s)["q05"] == nlohmann::json::parse("[0.1]"));
}

TEST_CASE("a corrupt stats.json is an error naming the file and the key") {
  TempDir dir;
  fs::path file = dir.path / "stats.json";
  CHECK(error_message<IoError>([&] { lrhost::data::read_stats_json(dir.path / "absent.json"); }).find("absent.json") !=
        std::string::npos);

  write_text(file, "{\"action\": {\"mean\": [1, 2,");
  CHECK(error_message<IoError>([&] { lrhost::data::read_stats_json(file); }).find(file.string()) != std::string::npos);
  // Found by tests/fuzz (stats_json): a number beyond double is nlohmann's out_of_range, not a
  // parse_error, and escaped the reader as an uncaught exception.
  write_text(file, "{\"action\": {\"max\": [5.0E4849512130022049]}}");
  CHECK(error_message<IoError>([&] { lrhost::data::read_stats_json(file); }).find(file.string()) != std::string::npos);

  const std::vector<std::pair<std::string, std::string>> bad{
      {R"([1, 2])", ""},                                         // top level not an object
      {R"({"action": [1, 2]})", "action"},                       // feature not an object
      {R"({"action": {"mean": {"x": [1]}}})", "mean"},           // stat nested one level too deep
      {R"({"action": {"std": [[1, 2], [3]]}})", "std"},          // ragged
      {R"({"action": {"std": [[1, 2], 3]}})", "std"},            // mixed depths
      {R"({"observation.state": {"min": ["a", "b"]}})", "min"},  // not numbers
      {R"({"observation.state": {"max": [1, null]}})", "observation.state"},
  };
  for (const auto& [text, key] : bad) {
    CAPTURE(text);
    write_text(file, text);
    auto msg = error_message<DataError>([&] { lrhost::data::read_stats_json(file); });
    CHECK(msg.find(file.string()) != std::string::npos);
    CHECK(msg.find(key) != std::string::npos);
  }
}

TEST_CASE("stats.json numbers are printed as Python's json.dump prints them") {
  // Expected text from: python -c "import json; print(json.dumps([1e-05, 1.5e-05, 0.0001, 1e16,
  //   1234567890123456.0, -0.0, 0.1, 100.0, 3e-300, 2.5e20, 123456789012345678.0, 8.105056762695312]))"
  TempDir dir;
  DatasetStats stats;
  stats["f"].extra["x"] = torch::tensor({1e-05, 1.5e-05, 0.0001, 1e16, 1234567890123456.0, -0.0, 0.1, 100.0, 3e-300,
                                         2.5e20, 123456789012345678.0, 8.105056762695312},
                                        torch::kFloat64);
  fs::path file = dir.path / "stats.json";
  lrhost::data::write_stats_json(file, stats);
  std::string text = read_text(file);
  std::string flat;
  for (char c : text)
    if (c != ' ' && c != '\n') flat += c;
  CHECK(flat ==
        "{\"f\":{\"x\":[1e-05,1.5e-05,0.0001,1e+16,1234567890123456.0,-0.0,0.1,100.0,3e-300,2.5e+20,"
        "1.2345678901234568e+17,8.105056762695312]}}");
  CHECK(text.rfind("{\n    \"f\": {\n        \"x\": [\n            1e-05,\n", 0) == 0);
}

// --- quantile stats for QUANTILES normalization (lrhost dataset stats) ------------------------------
TEST_CASE("require_norm_stats names the missing stats and the command that adds them") {
  FeatureStats s = hand_stats();
  s.quantiles.erase("q99");
  try {
    lrhost::data::require_norm_stats(s, "action", NormMode::Quantiles, "/data/pusht");
    FAIL("no error");
  } catch (const DataError& e) {
    std::string msg = e.what();
    CHECK(msg.find("'action'") != std::string::npos);
    CHECK(msg.find("QUANTILES") != std::string::npos);
    CHECK(msg.find("q99") != std::string::npos);
    CHECK(e.hint().find("lrhost dataset stats /data/pusht") != std::string::npos);
  }
  // Without a root the hint still names the command; the first batch's error says the same.
  try {
    lrhost::data::normalize(torch::zeros({1, 2}, torch::kFloat64), s, NormMode::Quantiles);
    FAIL("no error");
  } catch (const DataError& e) {
    CHECK(e.hint().find("lrhost dataset stats PATH") != std::string::npos);
  }
  CHECK_NOTHROW(lrhost::data::require_norm_stats(s, "action", NormMode::Quantile10, "x"));
  CHECK_NOTHROW(lrhost::data::require_norm_stats(s, "action", NormMode::MeanStd, "x"));
  CHECK_NOTHROW(lrhost::data::require_norm_stats(FeatureStats{}, "action", NormMode::Identity, "x"));
  CHECK(lrhost::data::stats_needed(NormMode::Quantile10) == std::vector<std::string>{"q10", "q90"});
}

TEST_CASE("QUANTILES by hand: no clipping, zero range, float32 inverse") {
  FeatureStats s;
  s.quantiles["q01"] = torch::tensor({-1.0f, 2.0f});
  s.quantiles["q99"] = torch::tensor({3.0f, 2.0f});
  torch::Tensor x = torch::tensor({{7.0f, 2.0f}, {-3.0f, 2.5f}});
  auto n = lrhost::data::normalize(x, s, NormMode::Quantiles);
  CHECK(elem(n, 0, 0) == 3.0);   // 2 (7 + 1) / 4 - 1: outside [-1, 1], not clipped
  CHECK(elem(n, 1, 0) == -2.0);  // 2 (-3 + 1) / 4 - 1
  CHECK(elem(n, 0, 1) == -1.0);  // x == q01 on a zero range → -1
  CHECK(elem(n, 1, 1) == static_cast<double>(2.0f * 0.5f / 1e-8f - 1.0f));  // d = 0 → eps
  auto back = lrhost::data::unnormalize(n, s, NormMode::Quantiles);
  CHECK(elem(back, 0, 0) == 7.0);  // (x + 1) d / 2 + q01
  CHECK(elem(back, 1, 0) == -3.0);
  CHECK(elem(back, 0, 1) == 2.0);
}

namespace {
// A small synthetic dataset (PNG cameras, no video encoding) whose stats.json has its quantiles removed.
fs::path dataset_without_quantiles(const fs::path& dir) {
  lrhost::data::SyntheticPushOptions options;
  options.episodes = 3;
  options.max_episode_length = 25;
  options.image_size = 32;
  options.cameras_as_images = true;
  lrhost::data::write_synthetic_push(dir, options);
  auto doc = nlohmann::ordered_json::parse(read_text(dir / "meta" / "stats.json"));
  for (auto& [key, entry] : doc.items())
    for (const char* q : {"q01", "q10", "q50", "q90", "q99"}) entry.erase(q);
  write_text(dir / "meta" / "stats.json", lrhost::data::python_json_text(doc));
  return dir;
}
}  // namespace

TEST_CASE("augment_quantile_stats adds q01..q99 and keeps every other key, value and the order") {
  TempDir tmp;
  fs::path root = dataset_without_quantiles(tmp.path / "push");
  const std::string before = read_text(root / "meta" / "stats.json");
  auto old_doc = nlohmann::ordered_json::parse(before);
  CHECK_FALSE(lrhost::data::has_quantile_stats(lrhost::data::read_stats_json(root / "meta" / "stats.json")));

  auto result = lrhost::data::augment_quantile_stats(root, /*overwrite=*/false);
  CHECK(result.written);
  auto doc = nlohmann::ordered_json::parse(read_text(root / "meta" / "stats.json"));
  std::vector<std::string> old_keys, new_keys;
  for (auto& [key, entry] : old_doc.items()) old_keys.push_back(key);
  for (auto& [key, entry] : doc.items()) new_keys.push_back(key);
  CHECK(old_keys == new_keys);
  for (auto& [key, entry] : old_doc.items()) {
    CAPTURE(key);
    std::vector<std::string> names;
    for (auto& [name, value] : doc[key].items()) names.push_back(name);
    std::vector<std::string> want;
    for (auto& [name, value] : entry.items()) want.push_back(name);
    for (const char* q : {"q01", "q10", "q50", "q90", "q99"}) want.emplace_back(q);
    CHECK(names == want);
    for (auto& [name, value] : entry.items()) CHECK(doc[key][name] == value);  // untouched
  }
  auto stats = lrhost::data::read_stats_json(root / "meta" / "stats.json");
  CHECK(lrhost::data::has_quantile_stats(stats));
  // Quantiles are ordered and lie within [min, max] (state, action: float32 vectors; camera [3,1,1]).
  for (const char* key : {"observation.state", "action", "observation.images.top"}) {
    CAPTURE(key);
    const auto& f = stats.at(key);
    CHECK(f.get("q01").sizes() == f.min.sizes());
    CHECK(torch::all(f.get("q01") <= f.get("q50")).item<bool>());
    CHECK(torch::all(f.get("q50") <= f.get("q99")).item<bool>());
    CHECK(torch::all(f.get("q01") >= f.min.to(torch::kFloat64) - 1e-6).item<bool>());
    CHECK(torch::all(f.get("q99") <= f.max.to(torch::kFloat64) + 1e-6).item<bool>());
  }
  // pi05's normalization now works with these stats.
  CHECK_NOTHROW(lrhost::data::require_norm_stats(stats.at("action"), "action", NormMode::Quantiles));

  SUBCASE("present quantiles are left alone unless overwrite") {
    const std::string with = read_text(root / "meta" / "stats.json");
    CHECK_FALSE(lrhost::data::augment_quantile_stats(root, false).written);
    CHECK(read_text(root / "meta" / "stats.json") == with);
    CHECK(lrhost::data::augment_quantile_stats(root, true).written);
    CHECK(read_text(root / "meta" / "stats.json") == with);  // deterministic: same bytes again
  }
  SUBCASE("a malformed stat is refused, with overwrite too, and the file is left as it was") {
    auto broken = doc;
    broken["action"]["mean"] = "x";
    lrhost::test::write_text(root / "meta" / "stats.json", broken.dump(4));
    const std::string kept = read_text(root / "meta" / "stats.json");
    for (bool overwrite : {false, true}) {
      CAPTURE(overwrite);
      CHECK_THROWS_AS(lrhost::data::augment_quantile_stats(root, overwrite), lrhost::util::Error);
      CHECK(read_text(root / "meta" / "stats.json") == kept);
    }
  }
}

TEST_CASE("lrhost dataset stats: error paths name the path") {
  TempDir tmp;
  auto run = [](const std::vector<std::string>& args) {
    CLI::App app;
    lrhost::cli::DatasetCommand command;
    lrhost::cli::add_dataset_command(app, command);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
    return lrhost::cli::run_dataset_command(command);
  };
  const std::string missing = (tmp.path / "nope").string();
  auto msg = error_message<IoError>([&] { run({"dataset", "stats", missing}); });
  CHECK(msg.find(missing) != std::string::npos);

  fs::path root = dataset_without_quantiles(tmp.path / "push");
  fs::rename(root / "meta" / "stats.json", root / "meta" / "stats.json.bak");
  msg = error_message<IoError>([&] { run({"dataset", "stats", root.string()}); });
  CHECK(msg.find((root / "meta" / "stats.json").string()) != std::string::npos);

  write_text(root / "meta" / "stats.json", "{\"action\": [1, 2");
  msg = error_message<DataError>([&] { run({"dataset", "stats", root.string()}); });
  CHECK(msg.find("stats.json") != std::string::npos);
  CHECK(read_text(root / "meta" / "stats.json") == "{\"action\": [1, 2");  // left as it was

  fs::remove(root / "meta" / "stats.json");
  fs::rename(root / "meta" / "stats.json.bak", root / "meta" / "stats.json");
  CHECK(run({"dataset", "stats", root.string()}) == 0);
  CHECK(lrhost::data::has_quantile_stats(lrhost::data::read_stats_json(root / "meta" / "stats.json")));
  CHECK(run({"dataset", "stats", root.string(), "--overwrite"}) == 0);
}
