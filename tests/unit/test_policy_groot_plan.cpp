// GR00T N1.7 planned without building (host/policy/groot/groot_plan): at the shipped tiny geometry the
// planned description must equal the built policy parameter by parameter (names, shapes, dtypes,
// requires_grad) and unit by unit under each tuning switch, so the memory plan `lrhost show` prints at
// full size is the plan of the policy training would build; and at LeRobot's geometry (a base folder
// holding only GR00TN17's config.json, tests/fixtures/groot/base_config) the counts are groot.md's
// meta-device measurement of LeRobot's GR00TN17 (§1.1, §3.3) and the DDP memory its §7 table.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <tuple>

#include "host/accel/memory_plan.hpp"
#include "host/dist/fsdp/wrap_units.hpp"
#include "host/policy/activation_probe.hpp"
#include "host/policy/groot/groot_plan.hpp"
#include "host/policy/groot/groot_policy.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "host/util/shipped_paths.hpp"

namespace {

namespace fs = std::filesystem;
using lrhost::policy::PlannedPolicy;
using lrhost::policy::groot::GrootPolicy;
using nlohmann::json;

json groot_plan_tiny_table(const json& extra) {
  const auto tiny = lrhost::util::shipped_asset_dir("lrhost/groot_tiny").string();
  json table{{"type", "groot"},
             {"geometry", tiny},
             {"tokenizer_name", tiny},
             {"chunk_size", 8},
             {"n_action_steps", 8},
             {"max_state_dim", 16},
             {"max_action_dim", 16},
             {"use_bf16", false},
             {"input_features",
              {{"observation.images.top", {{"type", "VISUAL"}, {"shape", {3, 32, 32}}}},
               {"observation.state", {{"type", "STATE"}, {"shape", {3}}}}}},
             {"output_features", {{"action", {{"type", "ACTION"}, {"shape", {2}}}}}}};
  table.update(extra);
  return table;
}

// LeRobot's geometry: no `geometry`, base_model_path a folder with GR00TN17's default config.json,
// the default tokenizer name (never resolved: planning needs no tokenizer), two cameras.
json groot_plan_full_table(const json& extra = json::object()) {
  const char* fixtures = std::getenv("LRHOST_TEST_FIXTURES");
  REQUIRE(fixtures != nullptr);
  json table{{"type", "groot"},
             {"geometry", ""},
             {"base_model_path", (fs::path(fixtures) / "groot" / "base_config").string()},
             {"input_features",
              {{"observation.images.front", {{"type", "VISUAL"}, {"shape", {3, 256, 256}}}},
               {"observation.images.wrist", {{"type", "VISUAL"}, {"shape", {3, 256, 256}}}},
               {"observation.state", {{"type", "STATE"}, {"shape", {7}}}}}},
             {"output_features", {{"action", {{"type", "ACTION"}, {"shape", {7}}}}}}};
  table.update(extra);
  return table;
}

// The parameters and units of LeRobot's geometry for `table` (the plan without its activation probes).
PlannedPolicy groot_full_parameters(const json& table) {
  const auto config = lrhost::policy::groot::GrootConfig::from_json(table, {});
  return lrhost::policy::groot::plan_groot_parameters(config, lrhost::policy::groot::resolve_geometry(config).model);
}

using GrootDescribed = std::map<std::string, std::tuple<std::vector<int64_t>, c10::ScalarType, bool>>;

GrootDescribed groot_describe(const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  GrootDescribed out;
  for (const auto& [name, p] : params) out[name] = {p.sizes().vec(), p.scalar_type(), p.requires_grad()};
  return out;
}

json groot_plan_config(int64_t dp_shard) {
  return {{"batch_size", 8}, {"steps", 100}, {"parallelism", {{"dp_shard", dp_shard}, {"dp_replicate", 1}}}};
}

int64_t groot_numel(const std::vector<std::pair<std::string, torch::Tensor>>& params, const std::string& prefix = "",
                    bool trainable_only = false) {
  int64_t n = 0;
  for (const auto& [name, p] : params)
    if (name.starts_with(prefix) && (!trainable_only || p.requires_grad())) n += p.numel();
  return n;
}

}  // namespace

TEST_CASE("groot plan: the planned description is the built policy, parameter by parameter and unit by unit") {
  const json switches[] = {json::object(),
                           {{"tune_llm", true}, {"tune_visual", true}},
                           {{"tune_projector", false}, {"tune_diffusion_model", false}, {"tune_vlln", false}},
                           {{"tune_top_llm_layers", 1}, {"tune_visual", true}, {"tune_vlln", false}}};
  for (const auto& extra : switches) {
    CAPTURE(extra.dump());
    auto policy = std::dynamic_pointer_cast<GrootPolicy>(lrhost::policy::create_policy(groot_plan_tiny_table(extra)));
    REQUIRE(policy);
    const auto planned = lrhost::policy::groot::plan_groot_parameters(policy->groot_config(), policy->geometry().model);
    std::vector<std::pair<std::string, torch::Tensor>> built;
    for (const auto& item : policy->named_parameters()) built.emplace_back(item.key(), item.value());
    CHECK(planned.parameters().size() == built.size());
    CHECK((groot_describe(planned.parameters()) == groot_describe(built)));

    const auto units = lrhost::dist::fsdp::find_wrap_units(*policy, {});
    REQUIRE(units.size() == planned.units.size() + 1);  // + the root unit
    for (std::size_t i = 0; i < planned.units.size(); ++i) {
      CHECK(units[i].path == planned.units[i].path);
      CHECK(units[i].module_type == planned.units[i].module_type);
      CHECK((groot_describe(units[i].params) == groot_describe(planned.units[i].params)));
    }
    CHECK((groot_describe(units.back().params) == groot_describe(planned.root)));

    // The Linear modules (what LoRA could adapt) are the built policy's.
    std::vector<std::string> linears;
    for (const auto& item : policy->named_modules("", false))
      if (item.value()->as<torch::nn::LinearImpl>() != nullptr) linears.push_back(item.key());
    auto planned_linears = planned.linear_modules;
    std::sort(planned_linears.begin(), planned_linears.end());
    std::sort(linears.begin(), linears.end());
    CHECK(planned_linears == linears);

    CHECK(json(planned.optimizer_preset) == json(policy->optimizer_preset()));
    CHECK(json(planned.scheduler_preset) == json(policy->scheduler_preset()));
    // The plan's figures from the description equal those from the policy.
    for (int64_t shard : {1, 4}) {
      const auto a = lrhost::accel::make_memory_plan(planned, groot_plan_config(shard), 4);
      const auto b = lrhost::accel::make_memory_plan(*policy, groot_plan_config(shard), 4);
      CHECK(a.parameters == b.parameters);
      CHECK(a.trainable == b.trainable);
      REQUIRE(a.strategies.size() == b.strategies.size());
      for (std::size_t s = 0; s < a.strategies.size(); ++s) {
        CHECK(a.strategies[s].name == b.strategies[s].name);
        CHECK(a.strategies[s].persistent_bytes() == b.strategies[s].persistent_bytes());
        CHECK(a.strategies[s].peak_gathered_bytes == b.strategies[s].peak_gathered_bytes);
      }
      CHECK(a.schedule == b.schedule);
    }
  }
}

TEST_CASE("groot plan: a geometry folder is built, LeRobot's geometry planned from config.json alone") {
  CHECK_FALSE(lrhost::policy::groot::plan_groot_without_building(groot_plan_tiny_table(json::object()), {}, {}));
  const auto* spec = lrhost::policy::find_policy_spec("groot");
  REQUIRE(spec != nullptr);
  REQUIRE(spec->plan_without_building);  // at full size: lua.show_groot_full_size (its probes build 2 GB models)
  // What GrootPolicy's constructor refuses, the plan refuses.
  CHECK_THROWS_AS(lrhost::policy::groot::plan_groot_without_building(
                      groot_plan_full_table({{"max_state_dim", 64}, {"max_action_dim", 64}}), {}, {}),
                  lrhost::util::ConfigError);
}

TEST_CASE("groot plan: LeRobot's geometry gives LeRobot's counts and memory (groot.md §1.1, §3.3, §7)") {
  const auto planned = std::optional<PlannedPolicy>(groot_full_parameters(groot_plan_full_table()));
  const auto params = planned->parameters();
  // 1,030 tensors: LeRobot's 1,031 state-dict keys less the lm_head tied to embed_tokens.
  CHECK(params.size() == 1030u);
  CHECK(groot_numel(params) == 3144016000);
  CHECK(groot_numel(params, "_groot_model.backbone.") == 1523500032);
  CHECK(groot_numel(params, "_groot_model.action_head.") == 1620515968);
  // By default only the action head trains (537 tensors).
  CHECK(groot_numel(params, "", true) == 1620515968);
  CHECK(std::count_if(params.begin(), params.end(), [](const auto& p) { return p.second.requires_grad(); }) == 537);
  std::map<std::string, int64_t> units;
  for (const auto& unit : planned->units) ++units[unit.module_type];
  const std::map<std::string, int64_t> lerobot_units{
      {"Qwen3VisionBlock", 24}, {"Qwen3TextDecoderLayer", 16}, {"BasicTransformerBlock", 4 + 32}};
  CHECK(units == lerobot_units);
  for (const auto& [name, p] : params) CHECK((p.scalar_type() == torch::kFloat32));  // model_params_fp32

  // DDP: weights 12.58 GB, gradients of the head 6.48 GB, AdamW's two moments 12.96 GB = 32.0 GB.
  const auto ddp_plan = lrhost::accel::make_memory_plan(*planned, groot_plan_config(1), 1);
  CHECK(ddp_plan.parameters == 3144016000);
  CHECK(ddp_plan.trainable == 1620515968);
  const auto& ddp = ddp_plan.strategies.front();
  CHECK(ddp.name == "ddp");
  CHECK(ddp.parameter_bytes == 3144016000LL * 4);
  CHECK(ddp.gradient_bytes == 1620515968LL * 4);
  CHECK(ddp.optimizer_bytes == 1620515968LL * 8);
  CHECK(ddp.persistent_bytes() == 32022255616LL);
  // FSDP: ZeRO-3 and ZeRO-2 keep about 1/N of that per rank (each unit's shard rounded up).
  for (int64_t ranks : {2, 4, 8}) {
    CAPTURE(ranks);
    const auto plan = lrhost::accel::make_memory_plan(*planned, groot_plan_config(ranks), ranks);
    for (const auto& s : plan.strategies) {
      if (s.name == "ddp") continue;
      CAPTURE(s.name);
      CHECK(s.persistent_bytes() >= ddp.persistent_bytes() / ranks);
      CHECK(s.persistent_bytes() <= ddp.persistent_bytes() / ranks * 101 / 100);
    }
  }

  // tune_llm + tune_visual: everything trains (50.3 GB static under DDP).
  const auto all = std::optional<PlannedPolicy>(
      groot_full_parameters(groot_plan_full_table({{"tune_llm", true}, {"tune_visual", true}})));
  CHECK(groot_numel(all->parameters(), "", true) == 3144016000);
  const auto all_plan = lrhost::accel::make_memory_plan(*all, groot_plan_config(1), 1);
  CHECK(all_plan.trainable == 3144016000);
  CHECK(all_plan.strategies.front().persistent_bytes() == 3144016000LL * 16);
}

TEST_CASE("groot plan: activations extrapolated from the probe models equal a measurement at the real depths") {
  // A tiny-width geometry deeper than the probes in every stack: 6 vision blocks (DeepStack after 1, 3,
  // 5), 5 text layers, 3 vl_self_attention blocks, 12 DiT blocks; everything trains, so each stack keeps
  // activations.
  // use_bf16: the probes run under the policy's own autocast, and the plan says so.
  for (const auto& [checkpointing, bf16] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
    CAPTURE(checkpointing);
    CAPTURE(bf16);
    auto config = lrhost::policy::groot::GrootConfig::from_json(
        groot_plan_tiny_table(
            {{"tune_llm", true}, {"tune_visual", true}, {"gradient_checkpointing", checkpointing}, {"use_bf16", bf16}}),
        {});
    auto geometry = lrhost::policy::groot::resolve_geometry(config);
    geometry.model.backbone.vision.depth = 6;
    geometry.model.backbone.vision.deepstack_visual_indexes = {1, 3, 5};
    geometry.model.backbone.text.num_hidden_layers = 5;
    geometry.model.select_layer = 5;
    geometry.model.head.vl_self_attention.num_layers = 3;
    geometry.model.head.dit.num_layers = 12;
    auto build = [&](const lrhost::policy::groot::GrootGeometry& g) {
      torch::manual_seed(0);
      return std::make_shared<GrootPolicy>(config, g);
    };
    const auto planned = lrhost::policy::groot::plan_groot_policy(config, geometry, build);
    auto direct = build(geometry);
    const auto measured =
        lrhost::policy::measure_activations(*direct, {}, lrhost::policy::activation_measure(checkpointing)).per_sample;
    CHECK(measured > 0);
    CHECK(planned.activation_bytes_per_sample == measured);
    CHECK(planned.activation_note.find("extrapolated to 6, 5, 3 and 12") != std::string::npos);
    const auto shown =
        lrhost::accel::render_memory_plan(lrhost::accel::make_memory_plan(planned, groot_plan_config(1), 1));
    CHECK((shown.find("under the policy's own bf16 autocast") != std::string::npos) == bf16);
    CHECK((shown.find("bf16 autocast roughly halves it") != std::string::npos) == !bf16);
  }
  // Depths below the probes' are not extrapolated: the note says why.
  auto config = lrhost::policy::groot::GrootConfig::from_json(groot_plan_tiny_table(json::object()), {});
  auto geometry = lrhost::policy::groot::resolve_geometry(config);
  geometry.model.head.dit.num_layers = 6;
  const auto planned = lrhost::policy::groot::plan_groot_policy(
      config, geometry, [](const lrhost::policy::groot::GrootGeometry&) -> std::shared_ptr<GrootPolicy> {
        FAIL("no probe may be built");
        return nullptr;
      });
  CHECK(planned.activation_bytes_per_sample == -1);
  CHECK(planned.activation_note.find("not measured: the model's depths") == 0);
}
