// Unit tests of GR00T N1.7's checkpoint-statistics numerics (host/policy/groot/groot_checkpoint_stats) beyond
// the LeRobot interop (interop.groot_checkpoint_stats): parsing a made-up embodiment (groups, dims, the
// percentile switch, horizon, camera keys), the flat stats, hand-computed normalisation (grouped and the
// flat fallback) and decode values, and every refusal.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "host/policy/groot/groot_checkpoint_stats.hpp"
#include "host/util/error.hpp"

namespace gp = lrhost::policy::groot;

namespace {

torch::Tensor gcs_f32(std::vector<float> values, std::vector<int64_t> shape) {
  return torch::tensor(values, torch::kFloat32).view(shape);
}

bool gcs_equal(const torch::Tensor& got, const torch::Tensor& want) {
  return got.sizes() == want.sizes() && got.scalar_type() == want.scalar_type() && torch::equal(got, want);
}

// A made-up embodiment "robo": state groups arm (2) + grip (1), action groups joints (2) + grip (1).
nlohmann::json gcs_statistics() {
  return nlohmann::json::parse(R"({
    "other": {},
    "robo": {
      "state": {
        "arm":  {"min": [-1, 0], "max": [1, 4], "q01": [-0.5, 1], "q99": [0.5, 3], "mean": [0, 2], "std": [1, 1]},
        "grip": {"min": [0], "max": [2], "q01": [0.5], "q99": [0.5], "mean": [1], "std": [0.5]}
      },
      "action": {
        "joints": {"min": [-2, 0], "max": [2, 1], "q01": [-1, 0.25], "q99": [1, 0.75], "mean": [0, 0.5],
                   "std": [1, 0.25]},
        "grip":   {"min": [0], "max": [1], "q01": [0], "q99": [1], "mean": [0.5], "std": [0.5]}
      }
    }
  })");
}

nlohmann::json gcs_processor(bool percentiles) {
  auto j = nlohmann::json::parse(R"({"processor_kwargs": {"modality_configs": {"robo": {
    "state": {"modality_keys": ["arm", "grip"]},
    "action": {"modality_keys": ["joints", "grip"], "delta_indices": [0, 1, 2],
               "action_configs": [{"rep": "ABSOLUTE", "type": "NON_EEF", "format": "DEFAULT"}, {"rep": "absolute"}]},
    "video": {"modality_keys": ["front", 3, "wrist"]}
  }}}})");
  j["processor_kwargs"]["use_percentiles"] = percentiles;
  return j;
}

gp::GrootCheckpointStats gcs_parse(bool percentiles) {
  auto parsed = gp::parse_groot_checkpoint_stats(gcs_statistics(), gcs_processor(percentiles), "robo", "ckpt");
  REQUIRE(parsed.has_value());
  return *parsed;
}

template <class E>
std::string gcs_error(const nlohmann::json& statistics, const nlohmann::json& processor) {
  try {
    (void)gp::parse_groot_checkpoint_stats(statistics, processor, "robo", "ckpt");
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

bool gcs_mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("groot checkpoint stats: parse keeps group order, dims, bounds per use_percentiles, horizon, cameras") {
  const auto s = gcs_parse(false);
  CHECK(s.embodiment_tag == "robo");
  REQUIRE(s.state_groups.size() == 2);
  REQUIRE(s.action_groups.size() == 2);
  CHECK(s.state_groups[0].key == "arm");
  CHECK(s.state_groups[1].key == "grip");
  CHECK(s.action_groups[0].key == "joints");
  CHECK(s.state_dim() == 3);
  CHECK(s.action_dim() == 3);
  CHECK(s.state_groups[0].lo == std::vector<double>{-1, 0});
  CHECK(s.state_groups[0].hi == std::vector<double>{1, 4});
  CHECK_FALSE(s.use_percentiles);
  CHECK(s.layout.valid_action_horizon == 3);
  REQUIRE(s.layout.video_modality_keys.has_value());
  CHECK(*s.layout.video_modality_keys == std::vector<std::string>{"front", "wrist"});

  const auto p = gcs_parse(true);
  CHECK(p.use_percentiles);
  CHECK(p.state_groups[0].lo == std::vector<double>{-0.5, 1});
  CHECK(p.action_groups[0].hi == std::vector<double>{1, 0.75});
  CHECK(p.action_groups[1].std == std::vector<double>{0.5});
}

TEST_CASE("groot checkpoint stats: no stats or modality config for the tag means the dataset-stats path") {
  CHECK_FALSE(gp::parse_groot_checkpoint_stats(gcs_statistics(), gcs_processor(false), "absent", "ckpt"));
  CHECK_FALSE(gp::parse_groot_checkpoint_stats(gcs_statistics(), nlohmann::json::object(), "robo", "ckpt"));
  CHECK_FALSE(gp::parse_groot_checkpoint_stats(nlohmann::json::object(), gcs_processor(false), "robo", "ckpt"));
  auto no_groups = gcs_processor(false);
  no_groups["processor_kwargs"]["modality_configs"]["robo"] = nlohmann::json::object();
  CHECK_FALSE(gp::parse_groot_checkpoint_stats(gcs_statistics(), no_groups, "robo", "ckpt"));
  // Without delta_indices / video keys the horizon and cameras are LeRobot's None.
  auto bare = gcs_processor(false);
  bare["processor_kwargs"]["modality_configs"]["robo"]["action"].erase("delta_indices");
  bare["processor_kwargs"]["modality_configs"]["robo"]["video"]["modality_keys"] = nlohmann::json::array({7});
  const auto s = gp::parse_groot_checkpoint_stats(gcs_statistics(), bare, "robo", "ckpt");
  REQUIRE(s.has_value());
  CHECK_FALSE(s->layout.valid_action_horizon.has_value());
  CHECK_FALSE(s->layout.video_modality_keys.has_value());
}

TEST_CASE("groot checkpoint stats: flat stats concatenate the groups (q01 / q99 under min / max)") {
  const auto flat = gp::groot_checkpoint_flat_stats(gcs_parse(true));
  CHECK(flat.state.min == std::vector<double>{-0.5, 1, 0.5});
  CHECK(flat.state.max == std::vector<double>{0.5, 3, 0.5});
  CHECK(flat.action.mean == std::vector<double>{0, 0.5, 0.5});
  CHECK(flat.action.std == std::vector<double>{1, 0.25, 0.5});
  const auto mm = flat.action.min_max();
  CHECK(gcs_equal(mm.min, gcs_f32({-1, 0.25f, 0}, {3})));
}

TEST_CASE("groot checkpoint stats: state normalisation with the flat bounds, clip and hi == lo") {
  const auto state = gcs_f32({0.5f, 5, 3, 0, 2, 1}, {2, 3});
  // min/max: arm 2(0.5+1)/2-1 = 0.5, 2·5/4-1 = 1.5 -> 1; grip 2·3/2-1 = 2 -> 1.
  CHECK(gcs_equal(gp::groot_checkpoint_normalize_state(state, gcs_parse(false), true),
                  gcs_f32({0.5f, 1, 1, 0, 0, 0}, {2, 3})));
  // q01/q99: arm 2(0.5+0.5)/1-1 = 1, 2(5-1)/2-1 = 3; grip q01 == q99 -> 0.
  CHECK(gcs_equal(gp::groot_checkpoint_normalize_state(state, gcs_parse(true), false),
                  gcs_f32({1, 3, 0, 0, 0, 0}, {2, 3})));
  CHECK_THROWS_AS(gp::groot_checkpoint_normalize_state(gcs_f32({1, 2, 3}, {1, 1, 3}), gcs_parse(false), true),
                  lrhost::util::DataError);
}

TEST_CASE("groot checkpoint stats: action normalisation per group, and the flat fallback when D differs") {
  const auto s = gcs_parse(false);
  const auto action = gcs_f32({0, 0.5f, 0.25f, 4, -1, 1}, {1, 2, 3});
  CHECK(gcs_equal(gp::groot_checkpoint_normalize_action(action, s, true), gcs_f32({0, 0, -0.5f, 1, -1, 1}, {1, 2, 3})));
  CHECK(
      gcs_equal(gp::groot_checkpoint_normalize_action(action, s, false), gcs_f32({0, 0, -0.5f, 2, -3, 1}, {1, 2, 3})));
  // (B, D) keeps its rank; a bf16 action is normalised in bf16 (the group bounds are cast to it).
  CHECK(gcs_equal(gp::groot_checkpoint_normalize_action(gcs_f32({0, 0.5f, 0.25f}, {1, 3}), s, true),
                  gcs_f32({0, 0, -0.5f}, {1, 3})));
  CHECK(
      (gp::groot_checkpoint_normalize_action(action.to(torch::kBFloat16), s, true).scalar_type() == torch::kBFloat16));
  // D = 2: the flat stats truncated; D = 4: padded with min 0 / max 1 (0.75 -> 0.5).
  CHECK(gcs_equal(gp::groot_checkpoint_normalize_action(gcs_f32({0, 0.5f}, {1, 1, 2}), s, true),
                  gcs_f32({0, 0}, {1, 1, 2})));
  CHECK(gcs_equal(gp::groot_checkpoint_normalize_action(gcs_f32({0, 0.5f, 0.25f, 0.75f}, {1, 1, 4}), s, true),
                  gcs_f32({0, 0, -0.5f, 0.5f}, {1, 1, 4})));
}

TEST_CASE("groot checkpoint stats: decode clips, unnormalises per group, truncates the horizon and slices") {
  const auto s = gcs_parse(false);
  // (1, 4, 5): padded model dims 3..4 dropped, horizon 4 -> valid 3.
  std::vector<float> v(20, 9.0f);
  const float rows[4][3] = {{0, 0.5f, -1}, {2, -2, 1}, {-0.5f, 0, 0.5f}, {1, 1, 1}};
  for (int t = 0; t < 4; ++t)
    for (int d = 0; d < 3; ++d) v[static_cast<std::size_t>(t * 5 + d)] = rows[t][d];
  const auto y = gcs_f32(v, {1, 4, 5});
  // joints: (y+1)·0.5·4 - 2 and (y+1)·0.5·1; grip: (y+1)·0.5.
  CHECK(gcs_equal(gp::groot_checkpoint_decode_action(y, s, 0),
                  gcs_f32({0, 0.75f, 0, 2, 0, 1, -1, 0.5f, 0.75f}, {1, 3, 3})));
  CHECK(gcs_equal(gp::groot_checkpoint_decode_action(y, s, 2), gcs_f32({0, 0.75f, 2, 0, -1, 0.5f}, {1, 3, 2})));
  // (B, D): one step. Percentiles: joints[1] (1.5·0.5)·0.5 + 0.25 = 0.625.
  CHECK(gcs_equal(gp::groot_checkpoint_decode_action(gcs_f32({0, 0.5f, -1}, {1, 3}), gcs_parse(true), 0),
                  gcs_f32({0, 0.625f, 0}, {1, 3})));
  CHECK((gp::groot_checkpoint_decode_action(y.to(torch::kFloat64), s, 0).scalar_type() == torch::kFloat64));
  CHECK_THROWS_AS(gp::groot_checkpoint_decode_action(gcs_f32({0, 0}, {1, 2}), s, 0), lrhost::util::DataError);
  CHECK_THROWS_AS(gp::groot_checkpoint_decode_action(gcs_f32({0}, {1, 1, 1, 1}), s, 0), lrhost::util::DataError);
}

TEST_CASE("groot checkpoint stats: relative groups, eef rotations and relative checkpoints are refused") {
  const auto stats = gcs_statistics();
  auto relative = gcs_processor(false);
  relative["processor_kwargs"]["modality_configs"]["robo"]["action"]["action_configs"][1]["rep"] = "RELATIVE";
  const auto msg = gcs_error<lrhost::util::NotImplemented>(stats, relative);
  CHECK(gcs_mentions(msg, "action.grip"));
  CHECK(gcs_mentions(msg, "relative"));
  auto delta = gcs_processor(false);
  delta["processor_kwargs"]["modality_configs"]["robo"]["action"]["action_configs"][0]["rep"] = "delta";
  CHECK(gcs_mentions(gcs_error<lrhost::util::NotImplemented>(stats, delta), "action.joints"));
  auto eef = gcs_processor(false);
  eef["processor_kwargs"]["modality_configs"]["robo"]["action"]["action_configs"][0] = {
      {"rep", "absolute"}, {"type", "EEF"}, {"format", "XYZ_ROT6D"}};
  const auto eef_msg = gcs_error<lrhost::util::NotImplemented>(stats, eef);
  CHECK(gcs_mentions(eef_msg, "action.joints"));
  CHECK(gcs_mentions(eef_msg, "xyz+rot6d"));
  auto native = gcs_processor(false);
  native["processor_kwargs"]["use_relative_action"] = true;
  CHECK(gcs_mentions(gcs_error<lrhost::util::NotImplemented>(stats, native), "use_relative_action"));
}

TEST_CASE("groot checkpoint stats: missing or malformed stats are ConfigErrors naming the group") {
  const auto processor = gcs_processor(false);
  auto missing = gcs_statistics();
  missing["robo"]["action"].erase("grip");
  CHECK(gcs_mentions(gcs_error<lrhost::util::ConfigError>(missing, processor), "action.grip"));
  auto no_q01 = gcs_statistics();
  no_q01["robo"]["state"]["arm"].erase("q01");
  CHECK(gcs_mentions(gcs_error<lrhost::util::ConfigError>(no_q01, gcs_processor(true)), "'q01'"));
  CHECK(gp::parse_groot_checkpoint_stats(no_q01, processor, "robo", "ckpt").has_value());  // unused without it
  auto no_std = gcs_statistics();
  no_std["robo"]["state"]["grip"].erase("std");
  CHECK(gcs_mentions(gcs_error<lrhost::util::ConfigError>(no_std, processor), "state.grip"));
  auto per_step = gcs_statistics();
  per_step["robo"]["action"]["joints"]["min"] = nlohmann::json::parse("[[-2, 0], [-2, 0]]");
  CHECK(gcs_mentions(gcs_error<lrhost::util::ConfigError>(per_step, processor), "action.joints.min"));
  auto lengths = gcs_statistics();
  lengths["robo"]["state"]["arm"]["max"] = nlohmann::json::parse("[1, 4, 5]");
  CHECK(gcs_mentions(gcs_error<lrhost::util::ConfigError>(lengths, processor), "differ in length"));
  auto state_only = gcs_processor(false);
  state_only["processor_kwargs"]["modality_configs"]["robo"]["action"]["modality_keys"] = nlohmann::json::array();
  CHECK(gcs_mentions(gcs_error<lrhost::util::ConfigError>(gcs_statistics(), state_only), "no action groups"));
  auto odd_flag = gcs_processor(false);
  odd_flag["processor_kwargs"]["use_percentiles"] = "yes";
  CHECK(gcs_mentions(gcs_error<lrhost::util::ConfigError>(gcs_statistics(), odd_flag), "use_percentiles"));
}
