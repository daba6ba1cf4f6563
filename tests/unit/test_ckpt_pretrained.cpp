// Unit tests of host/ckpt/pretrained_dir: save_pretrained -> load_pretrained round trips (weights,
// config, processors, file names and formats as LeRobot's), the strict key/shape/dtype checks, and
// clear errors for missing, corrupt or truncated files.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>

#include "host/ckpt/pretrained_dir.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::contains;
using lrhost::test::described_error;
using lrhost::test::write_text;

using lrhost::ckpt::load_pretrained;
using lrhost::ckpt::save_pretrained;
using lrhost::policy::create_policy;
using lrhost::test::TempDir;
using nlohmann::json;

namespace {

const json kConfig = {{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}, {"hidden_dims", {4, 5}}};

std::shared_ptr<lrhost::policy::Policy> make_policy(const json& config = kConfig) {
  auto p = create_policy(config);
  lrhost::data::DatasetStats stats;
  stats["observation.state"].set("mean", torch::tensor({1.0, 2.0, 3.0}));
  stats["observation.state"].set("std", torch::tensor({1.0, 2.0, 3.0}));
  stats["action"].set("min", torch::tensor({-1.0, -1.0}));
  stats["action"].set("max", torch::tensor({1.0, 3.0}));
  lrhost::policy::PolicyFeatures features;
  features.inputs = {{"observation.state", "STATE", {3}}};
  features.outputs = {{"action", "ACTION", {2}}};
  p->set_processors(std::make_shared<lrhost::policy::PolicyProcessors>(
      lrhost::policy::PolicyProcessors::build(features, {{"STATE", "MEAN_STD"}, {"ACTION", "MIN_MAX"}}, stats)));
  return p;
}

}  // namespace

TEST_CASE("save_pretrained writes LeRobot's files and load_pretrained restores the same policy") {
  TempDir dir("pretrained");
  torch::manual_seed(3);
  auto policy = make_policy();
  save_pretrained(*policy, dir.path);
  for (const char* file : {"config.json", "model.safetensors", "policy_preprocessor.json", "policy_postprocessor.json",
                           "policy_preprocessor_step_3_normalizer_processor.safetensors",
                           "policy_postprocessor_step_0_unnormalizer_processor.safetensors"})
    CHECK_MESSAGE(std::filesystem::exists(dir / file), std::string(file));
  // config.json: json.dump(indent=4) of the config, "type" first.
  auto config_text = lrhost::io::read_text_file(dir / "config.json");
  CHECK((config_text.rfind("{\n    \"type\": \"mlp\",\n", 0) == 0));
  CHECK((config_text == policy->config().dump(4)));
  // model.safetensors: one file, {"format": "pt"} metadata, every state dict entry.
  auto model = lrhost::io::read_safetensors(dir / "model.safetensors");
  CHECK((model.metadata == std::map<std::string, std::string>{{"format", "pt"}}));
  CHECK((model.tensors.size() == policy->state_dict().size()));

  torch::manual_seed(99);  // a different init, so equality below comes from the file
  auto loaded = load_pretrained(dir.path);
  CHECK((loaded->type() == "mlp"));
  CHECK((loaded->config() == policy->config()));
  CHECK_FALSE(loaded->is_training());
  auto want = policy->state_dict(), got = loaded->state_dict();
  REQUIRE(want.size() == got.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CHECK((got[i].first == want[i].first));
    CHECK((torch::equal(got[i].second, want[i].second)));
  }
  REQUIRE(loaded->processors());
  CHECK((*loaded->processors() == *policy->processors()));
  // Same predictions.
  lrhost::policy::Batch batch{{"observation.state", torch::randn({5, 3})}};
  policy->eval();
  CHECK((torch::equal(policy->select_action(batch), loaded->select_action(batch))));
}

TEST_CASE("a policy without processors saves and loads without processor files") {
  TempDir dir("pretrained_plain");
  auto policy = create_policy(kConfig);
  save_pretrained(*policy, dir.path);
  CHECK_FALSE(std::filesystem::exists(dir / "policy_preprocessor.json"));
  CHECK_FALSE(load_pretrained(dir.path)->processors());
}

TEST_CASE("loading checks the key set strictly, and shapes and dtypes always") {
  TempDir dir("pretrained_keys");
  auto policy = make_policy();
  save_pretrained(*policy, dir.path);
  auto entries = policy->state_dict();
  auto model_file = dir / "model.safetensors";

  // Missing key.
  auto fewer = entries;
  fewer.erase(fewer.begin());
  lrhost::io::write_safetensors(model_file, fewer, {{"format", "pt"}});
  auto error = described_error([&] { load_pretrained(dir.path); });
  CHECK(contains(error, "model.safetensors does not match the 'mlp' policy's state dict: missing keys '" +
                            entries.front().first + "'"));
  CHECK(contains(error, "strict = false"));
  // strict = false keeps the matching keys and reports the rest.
  auto target = create_policy(kConfig);
  auto before = target->state_dict().front().second.clone();
  auto report = lrhost::ckpt::load_state_dict(*target, model_file, false);
  CHECK((report.missing == std::vector<std::string>{entries.front().first}));
  CHECK((torch::equal(target->state_dict().front().second, before)));
  CHECK((torch::equal(target->state_dict()[1].second, entries[1].second)));
  CHECK((load_pretrained(dir.path, false)->type() == "mlp"));

  // Unexpected key.
  auto more = entries;
  more.emplace_back("normalize_inputs.buffer_observation_state.mean", torch::zeros({3}));
  lrhost::io::write_safetensors(model_file, more, {{"format", "pt"}});
  CHECK(contains(described_error([&] { load_pretrained(dir.path); }),
                 "unexpected keys 'normalize_inputs.buffer_observation_state.mean'"));
  CHECK((lrhost::ckpt::load_state_dict(*target, model_file, false).unexpected.size() == 1));

  // Shape mismatch (even with strict = false), and nothing is copied.
  auto reshaped = entries;
  reshaped[0].second = torch::zeros({7});
  lrhost::io::write_safetensors(model_file, reshaped, {{"format", "pt"}});
  before = target->state_dict()[1].second.clone();
  error = described_error([&] { lrhost::ckpt::load_state_dict(*target, model_file, false); });
  CHECK(contains(
      error, "'" + entries[0].first + "' has shape [7], the policy expects " + c10::str(entries[0].second.sizes())));
  CHECK((torch::equal(target->state_dict()[1].second, before)));

  // Dtype mismatch that is not a floating cast (an integer tensor for a float parameter).
  auto integral = entries;
  integral[1].second = integral[1].second.to(torch::kInt64);
  lrhost::io::write_safetensors(model_file, integral, {{"format", "pt"}});
  CHECK(contains(described_error([&] { load_pretrained(dir.path, false); }),
                 "'" + entries[1].first + "' has dtype Long, the policy expects Float"));
}

// Fine-tuning with another policy.dtype (LeRobot's --policy.path=<fp32 folder> --policy.dtype=bfloat16):
// the file's floating tensors are cast to the policy's dtype, exactly file.to(dtype).
TEST_CASE("loading casts floating tensors of another dtype to the policy's, as LeRobot does") {
  TempDir dir("pretrained_cast");
  torch::manual_seed(5);
  auto policy = make_policy();
  save_pretrained(*policy, dir.path);
  const auto model_file = dir / "model.safetensors";
  const auto file = lrhost::io::read_safetensors(model_file).tensors;  // float32

  SUBCASE("copying: a float32 file into a bfloat16 policy") {
    auto target = create_policy(kConfig);
    target->to(torch::kBFloat16);
    lrhost::ckpt::load_state_dict(*target, model_file);
    auto loaded = target->state_dict();
    REQUIRE(loaded.size() == file.size());
    for (const auto& [name, tensor] : file) {
      auto found = std::find_if(loaded.begin(), loaded.end(), [&](const auto& e) { return e.first == name; });
      REQUIRE(found != loaded.end());
      CHECK_MESSAGE((found->second.scalar_type() == torch::kBFloat16), name);
      CHECK_MESSAGE((torch::equal(found->second, tensor.to(torch::kBFloat16))), name);
    }
  }
  SUBCASE("file-backed: a bfloat16 file into a float32 policy, each tensor cast when copied out") {
    std::vector<std::pair<std::string, torch::Tensor>> bf16;
    for (const auto& [name, tensor] : file) bf16.emplace_back(name, tensor.to(torch::kBFloat16));
    lrhost::io::write_safetensors(model_file, bf16, {{"format", "pt"}});
    auto loaded = load_pretrained(dir.path, true, json::object(), lrhost::ckpt::WeightLoading::file_backed);
    // Nothing cast yet: the parameters still hold no values of their own (no second whole copy).
    for (const auto& p : loaded->parameters()) CHECK((lrhost::nn::is_released(p)));
    const auto cast_of = [&](const std::string& name) {
      const auto found = std::find_if(bf16.begin(), bf16.end(), [&](const auto& e) { return e.first == name; });
      REQUIRE(found != bf16.end());
      return found->second.to(torch::kFloat32);
    };
    // state_dict (what a save writes) already gives the cast values.
    for (const auto& [name, tensor] : loaded->state_dict()) {
      CHECK_MESSAGE((tensor.scalar_type() == torch::kFloat32), name);
      CHECK_MESSAGE((torch::equal(tensor, cast_of(name))), name);
    }
    loaded->materialize_file_casts();
    for (const auto& item : loaded->named_parameters()) {
      CHECK_FALSE((lrhost::nn::is_released(item.value())));
      CHECK_MESSAGE((torch::equal(item.value(), cast_of(item.key()))), item.key());
    }
  }
}

TEST_CASE("missing, corrupt and truncated pretrained files give errors naming the file") {
  TempDir dir("pretrained_bad");
  auto policy = make_policy();
  auto fresh = [&] { save_pretrained(*policy, dir.path); };
  fresh();
  auto model_file = dir / "model.safetensors";
  auto bytes = lrhost::io::read_text_file(model_file);
  write_text(model_file, bytes.substr(0, bytes.size() - 7));
  auto error = described_error([&] { load_pretrained(dir.path); });
  CHECK(contains(error, model_file.string()));

  fresh();
  write_text(model_file, "");
  CHECK(contains(described_error([&] { load_pretrained(dir.path); }), model_file.string()));

  fresh();
  auto config_file = dir / "config.json";
  auto config = lrhost::io::read_text_file(config_file);
  write_text(config_file, config.substr(0, config.size() / 2));
  CHECK(contains(described_error([&] { load_pretrained(dir.path); }), "config.json: not valid JSON"));

  write_text(config_file, R"({"input_dim": 3})");
  CHECK(contains(described_error([&] { load_pretrained(dir.path); }), "config.json: expected a policy config object"));

  write_text(config_file, R"({"type": "mlp", "input_dim": 3, "output_dim": 2, "hidden_dim": [4]})");
  CHECK(contains(described_error([&] { load_pretrained(dir.path); }), "config.json: "));

  fresh();
  std::filesystem::remove(model_file);
  CHECK(contains(described_error([&] { load_pretrained(dir.path); }), "model.safetensors"));

  fresh();
  auto pre = dir / "policy_preprocessor.json";
  write_text(pre, "{");
  CHECK(contains(described_error([&] { load_pretrained(dir.path); }), "policy_preprocessor.json: not valid JSON"));

  CHECK(contains(described_error([&] { load_pretrained(dir / "nope"); }), "no such folder"));
}
