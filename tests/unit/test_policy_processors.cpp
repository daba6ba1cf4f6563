// Unit tests of host/policy/processors: LeRobot's default pre/post processor pipelines — the
// normalization each feature type gets (through host/data/stats formulas), the exact JSON documents
// and flat float32 state files, the save/load round trip, and clear errors for broken files.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <fstream>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/processors.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::write_text;

using lrhost::data::DatasetStats;
using lrhost::data::FeatureStats;
using lrhost::policy::Batch;
using lrhost::policy::PolicyFeatures;
using lrhost::policy::PolicyProcessors;
using lrhost::test::TempDir;

namespace {

PolicyFeatures features() {
  PolicyFeatures f;
  f.inputs = {{"observation.state", "STATE", {3}}, {"observation.images.top", "VISUAL", {3, 4, 4}}};
  f.outputs = {{"action", "ACTION", {2}}};
  return f;
}

// Stats as a dataset gives them: float64 vectors, int64 count, (3,1,1) camera stats, and a
// meta-feature the policy does not use (it must still be saved).
DatasetStats stats() {
  DatasetStats s;
  auto d = torch::TensorOptions().dtype(torch::kFloat64);
  s["observation.state"].set("mean", torch::tensor({1.0, 2.0, 3.0}, d));
  s["observation.state"].set("std", torch::tensor({2.0, 0.5, 1.0}, d));
  s["observation.state"].set("min", torch::tensor({-1.0, 0.0, 1.0}, d));
  s["observation.state"].set("max", torch::tensor({3.0, 4.0, 5.0}, d));
  s["observation.state"].set("count", torch::tensor({10}, torch::kLong));
  s["observation.images.top"].set("mean", torch::full({3, 1, 1}, 0.5, d));
  s["observation.images.top"].set("std", torch::full({3, 1, 1}, 0.25, d));
  s["action"].set("min", torch::tensor({-2.0, 0.0}, d));
  s["action"].set("max", torch::tensor({2.0, 0.0}, d));  // zero range on one axis -> eps denominator
  s["action"].set("mean", torch::tensor({0.0, 0.0}, d));
  s["action"].set("std", torch::tensor({1.0, 1.0}, d));
  s["action"].set("q01", torch::tensor({-1.5, 0.0}, d));
  s["timestamp"].set("mean", torch::tensor({4.5}, d));
  return s;
}

const std::vector<std::pair<std::string, std::string>> kMap{
    {"VISUAL", "MEAN_STD"}, {"STATE", "MEAN_STD"}, {"ACTION", "MIN_MAX"}};

std::string load_error(const std::filesystem::path& dir) {
  try {
    PolicyProcessors::load(dir);
  } catch (const lrhost::util::Error& e) {
    return lrhost::util::describe(e);
  }
  return "";
}

}  // namespace

TEST_CASE("processors normalize inputs and the action per feature type and unnormalize actions") {
  auto p = PolicyProcessors::build(features(), kMap, stats());
  Batch batch{{"observation.state", torch::tensor({{3.0f, 2.5f, 3.0f}})},
              {"observation.images.top", torch::full({1, 3, 4, 4}, 0.75f)},
              {"action", torch::tensor({{2.0f, 0.0f}})},
              {"index", torch::tensor({7}, torch::kLong)}};
  auto out = p.normalize(batch);
  // MEAN_STD: (x - mean) / (std + eps)
  CHECK((out["observation.state"][0][0].item<float>() == doctest::Approx(1.0).epsilon(1e-6)));
  CHECK((out["observation.state"][0][1].item<float>() == doctest::Approx(1.0).epsilon(1e-6)));
  CHECK((out["observation.images.top"][0][2][3][3].item<float>() == doctest::Approx(1.0).epsilon(1e-6)));
  // MIN_MAX: 2 (x - min) / (max - min) - 1, a zero range divides by eps: (0 - 0) * 2 / eps - 1 = -1
  CHECK((out["action"][0][0].item<float>() == doctest::Approx(1.0)));
  CHECK((out["action"][0][1].item<float>() == doctest::Approx(-1.0)));
  CHECK((torch::equal(out["index"], batch["index"])));
  CHECK((out["action"].scalar_type() == torch::kFloat32));
  // Round trip through the postprocessor; the zero-range axis comes back as its min.
  auto back = p.unnormalize(out["action"]);
  CHECK((torch::allclose(back, batch["action"])));
  // The input batch is left untouched.
  CHECK((batch["observation.state"][0][0].item<float>() == 3.0f));
}

TEST_CASE("a feature type without a mode, or a feature without stats, passes through") {
  auto p = PolicyProcessors::build(features(), {{"ACTION", "MIN_MAX"}}, stats());
  Batch batch{{"observation.state", torch::tensor({{3.0f, 2.5f, 3.0f}})}};
  CHECK((torch::equal(p.normalize(batch)["observation.state"], batch["observation.state"])));
  auto no_stats = PolicyProcessors::build(features(), kMap, {});
  Batch action{{"action", torch::tensor({{0.5f, 0.5f}})}};
  CHECK((torch::equal(no_stats.normalize(action)["action"], action["action"])));
  CHECK_THROWS_AS(PolicyProcessors::build(features(), {{"STATE", "ZSCORE"}}, stats()), lrhost::util::ConfigError);
  CHECK_THROWS_AS(PolicyProcessors::build(features(), {{"IMAGE", "MEAN_STD"}}, stats()), lrhost::util::ConfigError);
}

TEST_CASE("processor files are LeRobot's: step names, configs, state file names and flat float32 stats") {
  TempDir dir("processors");
  auto p = PolicyProcessors::build(features(), kMap, stats(), "cuda");
  p.save(dir.path);
  auto pre = nlohmann::ordered_json::parse(lrhost::io::read_text_file(dir / "policy_preprocessor.json"));
  CHECK((pre["name"] == "policy_preprocessor"));
  REQUIRE(pre["steps"].size() == 4);
  CHECK((pre["steps"][0].dump() == R"({"registry_name":"rename_observations_processor","config":{"rename_map":{}}})"));
  CHECK((pre["steps"][1].dump() == R"({"registry_name":"to_batch_processor","config":{}})"));
  CHECK((pre["steps"][2].dump() ==
         R"({"registry_name":"device_processor","config":{"device":"cuda","float_dtype":null}})"));
  CHECK((pre["steps"][3]["registry_name"] == "normalizer_processor"));
  CHECK((pre["steps"][3]["state_file"] == "policy_preprocessor_step_3_normalizer_processor.safetensors"));
  CHECK(pre["steps"][3]["config"].dump() ==
        R"({"eps":1e-08,"features":{"observation.state":{"type":"STATE","shape":[3]},)"
        R"("observation.images.top":{"type":"VISUAL","shape":[3,4,4]},"action":{"type":"ACTION","shape":[2]}},)"
        R"("norm_map":{"VISUAL":"MEAN_STD","STATE":"MEAN_STD","ACTION":"MIN_MAX"}})");
  // json.dump(indent=2) layout: two-space indent, no trailing newline.
  auto text = lrhost::io::read_text_file(dir / "policy_preprocessor.json");
  CHECK((text.rfind("{\n  \"name\": \"policy_preprocessor\",\n  \"steps\": [\n    {\n", 0) == 0));
  CHECK((text.back() == '}'));
  auto post = nlohmann::ordered_json::parse(lrhost::io::read_text_file(dir / "policy_postprocessor.json"));
  CHECK((post["name"] == "policy_postprocessor"));
  REQUIRE(post["steps"].size() == 2);
  CHECK((post["steps"][0]["registry_name"] == "unnormalizer_processor"));
  CHECK((post["steps"][0]["state_file"] == "policy_postprocessor_step_0_unnormalizer_processor.safetensors"));
  CHECK((post["steps"][0]["config"]["features"].dump() == R"({"action":{"type":"ACTION","shape":[2]}})"));
  CHECK((post["steps"][1].dump() ==
         R"({"registry_name":"device_processor","config":{"device":"cpu","float_dtype":null}})"));
  // Both state files hold every stat of every feature given, meta-features included, as float32.
  for (const char* file : {"policy_preprocessor_step_3_normalizer_processor.safetensors",
                           "policy_postprocessor_step_0_unnormalizer_processor.safetensors"}) {
    auto content = lrhost::io::read_safetensors(dir / file);
    std::vector<std::string> names;
    for (const auto& [name, tensor] : content.tensors) {
      names.push_back(name);
      CHECK((tensor.scalar_type() == torch::kFloat32));
    }
    std::sort(names.begin(), names.end());
    CHECK(
        (names == std::vector<std::string>{"action.max", "action.mean", "action.min", "action.q01", "action.std",
                                           "observation.images.top.mean", "observation.images.top.std",
                                           "observation.state.count", "observation.state.max", "observation.state.mean",
                                           "observation.state.min", "observation.state.std", "timestamp.mean"}));
    CHECK((content.at("observation.images.top.mean").sizes() == torch::IntArrayRef({3, 1, 1})));
    CHECK((content.at("observation.state.count").item<float>() == 10.0f));
    CHECK(content.metadata.empty());
  }
}

TEST_CASE("processors round trip through save and load") {
  TempDir dir("processors_rt");
  auto p = PolicyProcessors::build(features(), kMap, stats(), "cpu");
  p.save(dir.path);
  auto q = PolicyProcessors::load(dir.path);
  CHECK((q == p));
  CHECK((q.preprocessor_json() == p.preprocessor_json()));
  CHECK((q.postprocessor_json() == p.postprocessor_json()));
  Batch batch{{"observation.state", torch::randn({4, 3})}, {"action", torch::randn({4, 2})}};
  auto a = p.normalize(batch), b = q.normalize(batch);
  CHECK((torch::equal(a["observation.state"], b["observation.state"])));
  CHECK((torch::equal(a["action"], b["action"])));
  // Without stats no state file is written (LeRobot writes none for an empty state dict).
  TempDir empty("processors_empty");
  PolicyProcessors::build(features(), kMap, {}).save(empty.path);
  CHECK_FALSE(std::filesystem::exists(empty / "policy_preprocessor_step_3_normalizer_processor.safetensors"));
  auto loaded = PolicyProcessors::load(empty.path);
  CHECK(loaded.normalizer().stats.empty());
}

TEST_CASE("broken processor files give errors naming the file and the problem") {
  TempDir dir("processors_bad");
  auto p = PolicyProcessors::build(features(), kMap, stats());
  auto fresh = [&] { p.save(dir.path); };
  fresh();
  auto pre_file = dir / "policy_preprocessor.json";
  auto text = lrhost::io::read_text_file(pre_file);
  write_text(pre_file, text.substr(0, text.size() / 2));
  auto error = load_error(dir.path);
  CHECK(error.find("policy_preprocessor.json: not valid JSON") != std::string::npos);

  fresh();
  auto pre = nlohmann::ordered_json::parse(text);
  pre["steps"][1]["registry_name"] = "tokenizer_processor";
  write_text(pre_file, pre.dump(2));
  CHECK(load_error(dir.path).find("step 1 is 'tokenizer_processor', expected 'to_batch_processor'") !=
        std::string::npos);

  fresh();
  pre = nlohmann::ordered_json::parse(text);
  pre["steps"][3]["config"]["norm_map"]["STATE"] = "ZSCORE";
  write_text(pre_file, pre.dump(2));
  CHECK(load_error(dir.path).find("norm_map['STATE']") != std::string::npos);

  fresh();
  auto state_file = dir / "policy_postprocessor_step_0_unnormalizer_processor.safetensors";
  auto bytes = lrhost::io::read_text_file(state_file);
  write_text(state_file, bytes.substr(0, bytes.size() - 5));
  error = load_error(dir.path);
  CHECK(error.find("policy_postprocessor_step_0_unnormalizer_processor.safetensors") != std::string::npos);

  fresh();
  std::filesystem::remove(dir / "policy_postprocessor.json");
  CHECK(load_error(dir.path).find("policy_postprocessor.json: file not found") != std::string::npos);

  fresh();
  lrhost::io::write_safetensors(dir / "policy_preprocessor_step_3_normalizer_processor.safetensors",
                                {{"nodot", torch::zeros({2})}});
  CHECK(load_error(dir.path).find("tensor 'nodot' is not named '<feature>.<stat>'") != std::string::npos);
}

TEST_CASE("processors: require_stats names the feature, the missing quantiles and the command that adds them") {
  auto quantiles = PolicyProcessors::build(features(), {{"ACTION", "QUANTILES"}}, stats());
  auto error = lrhost::test::described_error<lrhost::util::DataError>([&] { quantiles.require_stats("/data/ds"); });
  CHECK(error.find("feature 'action'") != std::string::npos);
  CHECK(error.find("q99") != std::string::npos);
  CHECK(error.find("lrhost dataset stats /data/ds") != std::string::npos);
  // Modes whose stats are present pass, and a feature without any stats passes through.
  CHECK_NOTHROW(PolicyProcessors::build(features(), kMap, stats()).require_stats("/data/ds"));
  CHECK_NOTHROW(PolicyProcessors::build(features(), {{"ACTION", "QUANTILES"}}, {}).require_stats("/data/ds"));
}

TEST_CASE("per-dataset stats: each sample normalized by its dataset's stats, saved per dataset, reloaded") {
  DatasetStats a = stats(), b = stats();
  auto d = torch::TensorOptions().dtype(torch::kFloat64);
  b["observation.state"].set("mean", torch::tensor({-4.0, 0.5, 8.0}, d));
  b["observation.state"].set("std", torch::tensor({3.0, 1.5, 0.25}, d));
  b["action"].set("min", torch::tensor({-7.0, -1.0}, d));
  b["action"].set("max", torch::tensor({1.0, 3.0}, d));
  auto p = PolicyProcessors::build(features(), kMap, stats());
  p.set_per_dataset_stats({{"mine", a}, {"public", b}});
  CHECK(p.per_dataset_names() == std::vector<std::string>{"mine", "public"});
  const auto only_a = p.for_dataset("mine"), only_b = p.for_dataset("public");

  torch::manual_seed(3);
  Batch batch{{"observation.state", torch::randn({4, 3})},
              {"observation.images.top", torch::rand({4, 3, 4, 4})},
              {"action", torch::randn({4, 5, 2})},
              {"dataset_index", torch::tensor({1, 0, 1, 1}, torch::kLong)}};
  const Batch out = p.normalize(batch);
  // Row by row, bitwise what that dataset's own processors give.
  for (int64_t row = 0; row < 4; ++row) {
    const auto& own = batch.at("dataset_index")[row].item<int64_t>() == 0 ? only_a : only_b;
    Batch one;
    for (const auto& [key, value] : batch) one[key] = value.narrow(0, row, 1);
    const Batch expected = own.normalize(one);
    for (const std::string key : {"observation.state", "observation.images.top", "action"})
      CHECK_MESSAGE(torch::equal(out.at(key).narrow(0, row, 1), expected.at(key)), key << " row " << row);
    CHECK(torch::equal(p.unnormalize(out.at("action").narrow(0, row, 1), batch.at("dataset_index").narrow(0, row, 1)),
                       own.unnormalize(expected.at("action"))));
  }
  CHECK(!torch::equal(only_a.normalize(batch).at("observation.state"), out.at("observation.state")));
  // Without the batch's dataset_index: an error for the inputs, the first dataset's stats for actions.
  Batch unlabeled = batch;
  unlabeled.erase("dataset_index");
  try {
    p.normalize(unlabeled);
    FAIL("a batch without dataset_index normalized");
  } catch (const lrhost::util::DataError& e) {
    CHECK(std::string(e.what()).find("'dataset_index'") != std::string::npos);
    CHECK(e.hint().find("--dataset-name") != std::string::npos);
  }
  CHECK(torch::equal(p.unnormalize(out.at("action")), only_a.unnormalize(out.at("action"))));
  // A dataset_index outside the policy's datasets is an error naming the key, not an index crash.
  Batch outside = batch;
  outside["dataset_index"] = torch::tensor({0, 2, 1, 0}, torch::kLong);
  try {
    p.normalize(outside);
    FAIL("dataset_index 2 of 2 datasets normalized");
  } catch (const lrhost::util::DataError& e) {
    CHECK(std::string(e.what()).find("outside 0..1") != std::string::npos);
  }
  // A feature with stats in one dataset and none in the other cannot be normalized per sample.
  DatasetStats partial = b;
  partial.erase("observation.state");
  auto uneven = PolicyProcessors::build(features(), kMap, stats());
  uneven.set_per_dataset_stats({{"mine", a}, {"public", partial}});
  try {
    uneven.normalize(batch);
    FAIL("a feature without stats in one dataset normalized");
  } catch (const lrhost::util::DataError& e) {
    CHECK(std::string(e.what()).find("dataset 'public' has no stats of 'observation.state'") != std::string::npos);
  }
  try {
    p.for_dataset("other");
    FAIL("an unknown dataset name was accepted");
  } catch (const lrhost::util::ConfigError& e) {
    CHECK(std::string(e.what()).find("'mine', 'public'") != std::string::npos);
  }
  CHECK_THROWS_AS(only_a.for_dataset("mine"), lrhost::util::ConfigError);  // one set of stats: no names

  // Saved: the default files hold the first dataset's stats, each dataset's files LeRobot's layout
  // for a pipeline named policy_preprocessor_<name>; loading gives back the same processors.
  TempDir dir("per_dataset_processors");
  p.save(dir.path);
  for (const std::string file :
       {"policy_preprocessor.json", "policy_preprocessor_mine.json", "policy_postprocessor_public.json",
        "policy_preprocessor_public_step_3_normalizer_processor.safetensors",
        "policy_postprocessor_public_step_0_unnormalizer_processor.safetensors", "per_dataset_stats.json"})
    CHECK_MESSAGE(std::filesystem::exists(dir.path / file), file);
  const auto loaded = PolicyProcessors::load(dir.path);
  CHECK((loaded == p));
  CHECK((loaded.for_dataset("public") == only_b));
  // One dataset's processors are ordinary ones: saved again, they write LeRobot's default files.
  TempDir again("per_dataset_one");
  loaded.for_dataset("public").save(again.path);
  CHECK(std::filesystem::exists(again.path / "policy_preprocessor.json"));
  CHECK(!std::filesystem::exists(again.path / "policy_preprocessor_public.json"));
  CHECK((PolicyProcessors::load(again.path) == only_b));
  const auto state =
      lrhost::io::read_safetensors(dir.path / "policy_preprocessor_public_step_3_normalizer_processor.safetensors");
  CHECK(torch::equal(state.at("observation.state.mean"), torch::tensor({-4.0f, 0.5f, 8.0f})));
  const auto first =
      lrhost::io::read_safetensors(dir.path / "policy_preprocessor_step_3_normalizer_processor.safetensors");
  CHECK(torch::equal(first.at("observation.state.mean"), torch::tensor({1.0f, 2.0f, 3.0f})));
}
