// The policy registry and its specs (host/policy/registry.hpp, policy_spec.hpp,
// processor_pipeline.hpp): every registered spec is complete and agrees with the policy it builds,
// and processor files are read back with the pipeline of the type that wrote them.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "host/io/atomic_dir.hpp"
#include "host/policy/policy_defaults.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "host/util/shipped_paths.hpp"
#include "test_support.hpp"

using lrhost::policy::ProcessorPipeline;
using lrhost::policy::ProcessorStepKind;

namespace {

bool has_key(const nlohmann::ordered_json& object, const std::string& key) {
  return object.contains(key);
}

}  // namespace

TEST_CASE("registry: every spec is complete, its defaults carry its fields, its recipe exists") {
  const auto& specs = lrhost::policy::policy_specs();
  REQUIRE(specs.size() >= 4);
  CHECK(std::is_sorted(specs.begin(), specs.end(), [](auto* a, auto* b) { return a->type < b->type; }));
  for (const auto* spec : specs) {
    CAPTURE(spec->type);
    CHECK(&lrhost::policy::policy_spec(spec->type) == spec);
    REQUIRE(static_cast<bool>(spec->create));
    REQUIRE(static_cast<bool>(spec->default_config));
    const auto defaults = spec->default_config();
    REQUIRE(defaults.is_object());
    CHECK(defaults.value("type", "") == spec->type);
    for (const auto& field : spec->weight_shape_fields) {
      CAPTURE(field);
      CHECK(has_key(defaults, field));
    }
    CHECK_FALSE(spec->fsdp_wrap_module_types.empty());
    for (const auto* steps : {&spec->processors.pre, &spec->processors.post})
      CHECK(ProcessorPipeline::index_of(*steps, ProcessorStepKind::device).has_value());
    // The steps holding the stats: the (un)normalizer, or GR00T's pack and unpack steps.
    CHECK(ProcessorPipeline::stats_step(spec->processors.pre).has_value());
    CHECK(ProcessorPipeline::stats_step(spec->processors.post).has_value());
    // A tokenizer needs the text it reads: a step that forms it (the new-line step, or pi05's state
    // prompt, which has no new-line step) comes before it; the state prompt reads the normalized state.
    // GR00T's VLM-encode step builds its prompt itself, after its pack step.
    if (auto vlm = ProcessorPipeline::index_of(spec->processors.pre, ProcessorStepKind::groot_vlm_encode)) {
      CHECK(*ProcessorPipeline::index_of(spec->processors.pre, ProcessorStepKind::groot_pack) < *vlm);
    } else if (spec->processors.has_language()) {
      auto new_line = ProcessorPipeline::index_of(spec->processors.pre, ProcessorStepKind::task_new_line);
      auto prompt = ProcessorPipeline::index_of(spec->processors.pre, ProcessorStepKind::state_prompt);
      REQUIRE((new_line.has_value() || prompt.has_value()));
      auto text_step = new_line ? *new_line : *prompt;
      CHECK(text_step < *ProcessorPipeline::index_of(spec->processors.pre, ProcessorStepKind::tokenizer));
      if (prompt) CHECK(*ProcessorPipeline::index_of(spec->processors.pre, ProcessorStepKind::normalizer) < *prompt);
    }
    if (spec->lerobot_train) {
      CHECK(std::filesystem::exists(lrhost::util::shipped_recipes_dir() / spec->lerobot_train->recipe));
      CHECK_FALSE(spec->lerobot_train->optimizer_preset.empty());
      for (const auto& field : spec->lerobot_train->deviating_fields) {
        CAPTURE(field);
        CHECK(has_key(defaults, field));
      }
    }
  }
}

TEST_CASE("registry: a policy built from a spec reports the spec's type and wrap units") {
  auto mlp = lrhost::policy::create_policy({{"type", "mlp"}, {"input_dim", 3}, {"output_dim", 2}});
  CHECK(mlp->type() == "mlp");
  CHECK(mlp->fsdp_wrap_module_types() == lrhost::policy::policy_spec("mlp").fsdp_wrap_module_types);
  auto unknown = lrhost::test::error_of<lrhost::util::ConfigError>([] {
    lrhost::policy::create_policy({{"type", "pi9"}});
  });
  CHECK(unknown.find("unknown policy type 'pi9'") != std::string::npos);
  CHECK(lrhost::test::described_error<lrhost::util::ConfigError>([] {
          lrhost::policy::policy_spec("pi9");
        }).find("'act'") != std::string::npos);
  CHECK(lrhost::policy::find_policy_spec("pi9") == nullptr);
  // GR00T is registered: a config without a camera fails LeRobot's validate_features, by name.
  CHECK(lrhost::policy::find_policy_spec("groot") != nullptr);
  const auto groot = lrhost::test::error_of<lrhost::util::ConfigError>([] {
    lrhost::policy::create_policy({{"type", "groot"}});
  });
  CHECK(groot.find("GR00T needs at least one VISUAL input feature") != std::string::npos);
  CHECK(lrhost::policy::default_policy_config("act").value("type", "") == "act");
}

TEST_CASE("processor pipelines: the language pipeline's order and state file names") {
  const auto pipeline = ProcessorPipeline::with_language("x_new_line_processor");
  std::vector<std::string> names;
  for (const auto& step : pipeline.pre) names.push_back(step.registry_name);
  CHECK(
      (names == std::vector<std::string>{"rename_observations_processor", "to_batch_processor", "x_new_line_processor",
                                         "tokenizer_processor", "device_processor", "normalizer_processor"}));
  CHECK(ProcessorPipeline::matches(pipeline.pre, names));
  names.pop_back();
  CHECK_FALSE(ProcessorPipeline::matches(pipeline.pre, names));
  CHECK(lrhost::policy::step_state_file("policy_preprocessor", 5, "normalizer_processor") ==
        "policy_preprocessor_step_5_normalizer_processor.safetensors");
  CHECK_FALSE(ProcessorPipeline::lerobot_default() == pipeline);
}

TEST_CASE("processors: build refuses language settings and pipelines that do not fit together") {
  lrhost::policy::PolicyFeatures features;
  features.inputs.push_back({"observation.state", "STATE", {2}});
  features.outputs.push_back({"action", "ACTION", {2}});
  const std::vector<std::pair<std::string, std::string>> map{{"STATE", "MEAN_STD"}, {"ACTION", "MEAN_STD"}};
  auto no_tokenizer = lrhost::test::error_of<lrhost::util::ConfigError>(
      [&] { lrhost::policy::PolicyProcessors::build(features, map, {}, "cpu", lrhost::policy::LanguageSettings{}); });
  CHECK(no_tokenizer.find("without a tokenizer step") != std::string::npos);
  auto no_language = lrhost::test::error_of<lrhost::util::ConfigError>([&] {
    lrhost::policy::PolicyProcessors::build(features, map, {}, "cpu", std::nullopt,
                                            ProcessorPipeline::with_language("x_new_line_processor"));
  });
  CHECK(no_language.find("no language settings") != std::string::npos);
  auto broken = ProcessorPipeline::lerobot_default();
  broken.post.pop_back();
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([&] {
          lrhost::policy::PolicyProcessors::build(features, map, {}, "cpu", std::nullopt, broken);
        }).find("lacks a device") != std::string::npos);
}

TEST_CASE("processors: files are read with the registered pipeline their steps name") {
  lrhost::test::TempDir dir("registry_pipelines");
  lrhost::policy::PolicyFeatures features;
  features.inputs.push_back({"observation.state", "STATE", {2}});
  features.outputs.push_back({"action", "ACTION", {2}});
  lrhost::data::DatasetStats stats;
  stats["action"].set("mean", torch::tensor({1.0f, 2.0f}));
  stats["action"].set("std", torch::tensor({2.0f, 4.0f}));
  auto written = lrhost::policy::PolicyProcessors::build(features, {{"ACTION", "MEAN_STD"}}, stats);
  written.save(dir.path);
  auto read = lrhost::policy::PolicyProcessors::load(dir.path);
  CHECK((read == written));
  CHECK((read.pipeline() == ProcessorPipeline::lerobot_default()));
  CHECK(std::filesystem::exists(dir / read.normalizer_state_file()));
  // A step list no registered policy writes names the first step that differs and the types.
  auto pre = lrhost::io::read_json_file(dir / lrhost::policy::kPreprocessorFile, {});
  pre["steps"][2]["registry_name"] = "pi9_state_processor";
  lrhost::io::write_file_atomic(dir / lrhost::policy::kPreprocessorFile, pre.dump(2));
  auto error =
      lrhost::test::described_error<lrhost::util::DataError>([&] { lrhost::policy::PolicyProcessors::load(dir.path); });
  CHECK(error.find("step 2 is 'pi9_state_processor', expected 'device_processor'") != std::string::npos);
  CHECK(error.find("'smolvla'") != std::string::npos);
}

namespace {

// A policy with its own normalization mapping, for lr.policy.new's normalization_mapping option.
struct MappedPolicy final : lrhost::policy::Policy {
  lrhost::policy::PolicyOutput forward(const lrhost::policy::Batch&) override { return {}; }
  std::string type() const override { return "mlp"; }
  nlohmann::ordered_json config() const override { return {{"type", "mlp"}}; }
  std::map<std::string, std::string> normalization_mapping() const override {
    return {{"STATE", "MEAN_STD"}, {"ACTION", "MIN_MAX"}};
  }
};

}  // namespace

TEST_CASE("processors: a normalization_mapping option replaces only the feature types it names") {
  lrhost::policy::PolicyFeatures features;
  features.inputs.push_back({"observation.state", "STATE", {2}});
  features.outputs.push_back({"action", "ACTION", {2}});
  MappedPolicy policy;
  using lrhost::data::NormMode;
  auto plain = lrhost::policy::PolicyProcessors::for_policy(policy, features, {});
  CHECK(plain.normalizer().mode_of("STATE") == NormMode::MeanStd);
  auto changed = lrhost::policy::PolicyProcessors::for_policy(policy, features, {}, {{"STATE", "IDENTITY"}});
  CHECK(changed.normalizer().mode_of("STATE") == NormMode::Identity);
  CHECK(changed.normalizer().mode_of("ACTION") == NormMode::MinMax);  // kept, not dropped
  CHECK(changed.unnormalizer().mode_of("ACTION") == NormMode::MinMax);
}
