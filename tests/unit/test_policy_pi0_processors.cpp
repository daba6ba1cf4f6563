// pi0 / pi05 configs and processor pipelines (host/policy/pi0, pi05, state_prompt, processors): the
// config defaults and order are LeRobot 0.6.1's config.json (fixtures written by draccus from the
// interop venv), errors name the key, pi05's prompt bins are numpy.digitize's, and the pipelines' files
// round trip with the normalizer before the state prompt.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "host/io/atomic_dir.hpp"
#include "host/policy/pi0/pi0_config.hpp"
#include "host/policy/pi05/pi05_config.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/policy/state_prompt.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::policy::Batch;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// Stats of a 2-D state and action for every normalization mode the pi pipelines use.
lrhost::data::DatasetStats state_action_stats() {
  lrhost::data::DatasetStats stats;
  for (const char* key : {"observation.state", "action"}) {
    stats[key].set("mean", torch::tensor({1.0f, 2.0f}));
    stats[key].set("std", torch::tensor({2.0f, 4.0f}));
    stats[key].set("q01", torch::tensor({-1.0f, 0.0f}));
    stats[key].set("q99", torch::tensor({1.0f, 4.0f}));
  }
  return stats;
}

ordered_json pi_reference(const std::string& name) {
  auto path = lrhost::test::fixture_path("policies", name + "_config_defaults.json");
  REQUIRE_FALSE(path.empty());
  return lrhost::io::read_json_file(path, {})["config"];
}

// Keys in order and values, but "device": LeRobot's __post_init__ resolves None to the machine's
// device, lrhost keeps null until the policy is built.
void check_defaults(ordered_json ours, ordered_json reference) {
  ours.erase("device");
  reference.erase("device");
  std::vector<std::string> ours_keys, reference_keys;
  for (const auto& [key, value] : ours.items()) ours_keys.push_back(key);
  for (const auto& [key, value] : reference.items()) reference_keys.push_back(key);
  CHECK(ours_keys == reference_keys);
  CHECK(json::parse(ours.dump()) == json::parse(reference.dump()));
}

}  // namespace

TEST_CASE("pi0/pi05 configs: defaults and field order are LeRobot 0.6.1's config.json") {
  check_defaults(lrhost::policy::pi0::PI0Config{}.to_json(), pi_reference("pi0"));
  check_defaults(lrhost::policy::pi05::PI05Config{}.to_json(), pi_reference("pi05"));
  // The registry's defaults are the same documents plus lrhost's own fields, which config.json never holds.
  auto recipe_defaults = lrhost::policy::policy_spec("pi05").default_config();
  CHECK(recipe_defaults["geometry"] == "");
  CHECK(recipe_defaults["tokenizer_name"] == "google/paligemma-3b-pt-224");
  recipe_defaults.erase("geometry");
  recipe_defaults.erase("tokenizer_name");
  check_defaults(recipe_defaults, pi_reference("pi05"));
  CHECK((lrhost::policy::pi0::PI0Config::weight_shape_fields() ==
         std::vector<std::string>{"paligemma_variant", "action_expert_variant", "max_state_dim", "max_action_dim",
                                  "image_resolution", "geometry"}));
  // A LeRobot config.json reads back to the defaults (device aside) and writes the same document.
  auto reference = pi_reference("pi05");
  auto read = lrhost::policy::pi05::PI05Config::from_json(json::parse(reference.dump()));
  CHECK(read.tokenizer_max_length == 200);
  CHECK(read.input_features.size() == 1);  // validate_features: the padded state
  CHECK((read.input_features[0].shape == std::vector<int64_t>{32}));
}

TEST_CASE("pi0/pi05 configs: type errors name the key; LeRobot's checks; unimplemented options refused") {
  using lrhost::policy::pi0::PI0Config;
  using lrhost::util::ConfigError;
  auto wrong = lrhost::test::error_of<ConfigError>([] { PI0Config::from_json({{"chunk_size", "fifty"}}); });
  CHECK(wrong.find("chunk_size") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([] {
          PI0Config::from_json({{"paligemma_variant", "gemma_7b"}});
        }).find("paligemma_variant") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([] {
          PI0Config::from_json({{"dtype", "float16"}});
        }).find("dtype") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([] {
          PI0Config::from_json({{"n_action_steps", 60}});
        }).find("cannot be greater than 'chunk_size'") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([] {
          PI0Config::from_json({{"relative_exclude_joints", {1, 2}}});
        }).find("relative_exclude_joints") != std::string::npos);
  CHECK(lrhost::test::error_of<ConfigError>([] {
          PI0Config::from_json({{"unknown_field", 1}});
        }).find("unknown_field") != std::string::npos);
  CHECK(lrhost::test::error_of<lrhost::util::NotImplemented>([] {
          PI0Config::from_json({{"use_relative_actions", true}});
        }).find("use_relative_actions") != std::string::npos);
  auto cameras = PI0Config::from_json({{"empty_cameras", 2}, {"image_resolution", {224, 224}}});
  CHECK(cameras.input_features.size() == 3);
  CHECK((cameras.input_features[0].shape == std::vector<int64_t>{3, 224, 224}));
  // create checks the config before building anything.
  CHECK(lrhost::test::error_of<ConfigError>([] {
          lrhost::policy::create_policy({{"type", "pi05"}, {"chunk_size", -1}});
        }).find("chunk_size") != std::string::npos);
}

TEST_CASE("pi05 state prompt: numpy.digitize's bins (NaN -> 255, below -1 -> -1) and Python's strip") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto x = torch::tensor({-1.5f, -1.0f, -1e-30f, 0.0f, 1e-30f, 0.5f, 0.9921875f, 0.99f, 1.0f, 2.0f, nan, -inf, inf});
  // numpy.digitize(x, np.linspace(-1, 1, 257)[:-1]) - 1 on these float32 values, from the interop venv.
  auto expected = torch::tensor({-1, 0, 127, 128, 128, 192, 255, 254, 255, 255, 255, -1, 255}, torch::kLong);
  CHECK(torch::equal(lrhost::policy::state_bins(x), expected));
  CHECK(lrhost::policy::clean_task_text("  push_the block\nnow \u00a0") == "push the block now");
  auto prompts =
      lrhost::policy::state_prompts({"push the block 10 cm left"}, torch::tensor({{-0.7f, 0.4f, -1.2f, 1.5f, -1.0f}}));
  CHECK(prompts[0] == "Task: push the block 10 cm left, State: 38 179 -1 255 0;\nAction: ");
}

TEST_CASE("processors: pi0 and pi05 pipelines write LeRobot's steps, round trip, and run in order") {
  const auto vlm = lrhost::test::fixture_path("../../recipes/assets", "smolvla_tiny_vlm");
  REQUIRE_FALSE(vlm.empty());
  lrhost::policy::PolicyFeatures features;
  features.inputs.push_back({"observation.state", "STATE", {2}});
  features.outputs.push_back({"action", "ACTION", {2}});
  auto stats = state_action_stats();
  for (std::string type : {"pi0", "pi05"}) {
    CAPTURE(type);
    lrhost::test::TempDir dir("pi_processors_" + type);
    const bool pi05 = type == "pi05";
    const std::string mode = pi05 ? "QUANTILES" : "MEAN_STD";
    auto processors = lrhost::policy::PolicyProcessors::build(
        features, {{"VISUAL", "IDENTITY"}, {"STATE", mode}, {"ACTION", mode}}, stats, "cpu",
        lrhost::policy::LanguageSettings{vlm.string(), vlm, pi05 ? 200 : 48, "max_length"},
        lrhost::policy::policy_spec(type).processors);
    processors.save(dir.path);
    auto pre = lrhost::io::read_json_file(dir / "policy_preprocessor.json", {});
    auto post = lrhost::io::read_json_file(dir / "policy_postprocessor.json", {});
    const std::size_t normalizer = pi05 ? 3 : 6;
    CHECK(pre["steps"][normalizer]["state_file"] ==
          "policy_preprocessor_step_" + std::to_string(normalizer) + "_normalizer_processor.safetensors");
    CHECK(pre["steps"][pi05 ? 2 : 5]["config"] ==
          ordered_json({{"enabled", false}, {"exclude_joints", {"gripper"}}, {"action_names", nullptr}}));
    CHECK(post["steps"][1]["registry_name"] == "absolute_actions_processor");
    CHECK(post["steps"][1]["config"] == ordered_json({{"enabled", false}}));
    auto loaded = lrhost::policy::PolicyProcessors::load(dir.path);
    CHECK((loaded == processors));
    Batch batch{{"observation.state", torch::tensor({{0.0f, 2.0f}, {1.0f, 4.0f}})}};
    auto out = loaded.normalize(batch, {"push_the block", "stack\n"});
    CHECK(out.at("observation.language.tokens").size(1) == (pi05 ? 200 : 48));
    if (pi05) {
      // QUANTILES before the prompt: state (0, 2) -> (0, 0) -> bins 128 128; (1, 4) -> (1, 1) -> 255 255.
      CHECK(torch::allclose(out.at("observation.state"), torch::tensor({{0.0f, 0.0f}, {1.0f, 1.0f}})));
      lrhost::policy::TaskTokenizer tokenizer({vlm.string(), vlm, 200, "max_length"});
      auto expected = tokenizer.tokenize(
          {"Task: push the block, State: 128 128;\nAction: ", "Task: stack, State: 255 255;\nAction: "});
      CHECK(torch::equal(out.at("observation.language.tokens"), expected.tokens));
      CHECK(torch::equal(out.at("observation.language.attention_mask"), expected.attention_mask));
    } else {
      lrhost::policy::TaskTokenizer tokenizer({vlm.string(), vlm, 48, "max_length"});
      auto expected = tokenizer.tokenize({"push_the block\n", "stack\n"});
      CHECK(torch::equal(out.at("observation.language.tokens"), expected.tokens));
    }
    // Through task_index: the same tokens.
    loaded.set_task_table({"push_the block", "stack\n"});
    Batch indexed = batch;
    indexed["task_index"] = torch::tensor({0, 1}, torch::kLong);
    auto via_index = loaded.normalize(indexed);
    CHECK(torch::equal(via_index.at("observation.language.tokens"), out.at("observation.language.tokens")));
    // enabled = true is refused, naming the file and the key.
    pre["steps"][pi05 ? 2 : 5]["config"]["enabled"] = true;
    lrhost::io::write_file_atomic(dir / "policy_preprocessor.json", pre.dump(2));
    auto refused =
        lrhost::test::error_of<lrhost::util::NotImplemented>([&] { lrhost::policy::PolicyProcessors::load(dir.path); });
    CHECK(refused.find("policy_preprocessor.json") != std::string::npos);
    CHECK(refused.find("'enabled' = true") != std::string::npos);
  }
}

TEST_CASE("processors: the preprocessor cut at its device step equals the whole, with cameras uint8 before the cut") {
  // What BatchLoader does with preprocess = policy: the steps before the device step on the host batch
  // (cameras uint8), cameras float in [0, 1] after the copy, then the steps after it.
  const auto vlm = lrhost::test::fixture_path("../../recipes/assets", "smolvla_tiny_vlm");
  REQUIRE_FALSE(vlm.empty());
  const std::string camera = "observation.images.top";
  lrhost::policy::PolicyFeatures features;
  features.inputs.push_back({"observation.state", "STATE", {2}});
  features.inputs.push_back({camera, "VISUAL", {3, 4, 4}});
  features.outputs.push_back({"action", "ACTION", {2}});
  auto stats = state_action_stats();
  stats[camera].set("mean", torch::full({3, 1, 1}, 0.4f));
  stats[camera].set("std", torch::full({3, 1, 1}, 0.2f));
  torch::manual_seed(3);
  const auto frames = torch::randint(0, 256, {2, 3, 4, 4}, torch::kByte);
  const Batch host{{"observation.state", torch::tensor({{0.0f, 2.0f}, {1.0f, 4.0f}})},
                   {"action", torch::tensor({{1.0f, 2.0f}, {3.0f, 6.0f}})},
                   {"task_index", torch::tensor({0, 1}, torch::kLong)},
                   {camera, frames}};
  Batch copied_whole = host;
  copied_whole[camera] = frames.to(torch::kFloat).div_(255.0);
  for (std::string type : {"pi0", "pi05"}) {
    CAPTURE(type);
    const bool pi05 = type == "pi05";
    const std::string mode = pi05 ? "QUANTILES" : "MEAN_STD";
    // VISUAL MEAN_STD (not the default IDENTITY): pi05 then normalizes the uint8 frames before the cut.
    auto processors = lrhost::policy::PolicyProcessors::build(
        features, {{"VISUAL", "MEAN_STD"}, {"STATE", mode}, {"ACTION", mode}}, stats, "cpu",
        lrhost::policy::LanguageSettings{vlm.string(), vlm, 24, "max_length"},
        lrhost::policy::policy_spec(type).processors);
    processors.set_task_table({"push the block", "stack"});
    const Batch whole = processors.normalize(copied_whole);
    Batch cut = processors.preprocess_before_device(host);
    // pi05 builds and tokenizes its state prompt before the cut (LeRobot's order); pi0 tokenizes the task there.
    CHECK(cut.count("observation.language.tokens") == 1);
    CHECK((cut.at(camera).scalar_type() == torch::kByte) == !pi05);
    for (auto& [key, tensor] : cut)
      if (tensor.scalar_type() == torch::kByte) tensor = tensor.to(torch::kFloat).div_(255.0);
    const Batch split = processors.preprocess_after_device(cut);
    REQUIRE(split.size() == whole.size());
    for (const auto& [key, tensor] : whole) {
      CAPTURE(key);
      REQUIRE(split.count(key) == 1);
      CHECK(torch::equal(split.at(key), tensor));
    }
    CHECK_FALSE(torch::equal(whole.at(camera), copied_whole.at(camera)));  // the frames were normalized
  }
}
