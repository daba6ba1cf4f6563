// pi0/pi05 planned without building (host/policy/pi/pi_plan): at the shipped tiny geometry the
// planned description must equal the built policy parameter by parameter (names, shapes, dtypes,
// requires_grad) and unit by unit, in both dtype modes and with each freezing option, so the memory
// plan of `lrhost show` at full size is the plan of the policy training would build; the plan's
// figures equal those of the built policy; the extrapolated activations equal a measurement at the
// real depth; and at LeRobot's geometry the counts are LeRobot's (pi0.md §1.1, §10.1).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "host/accel/memory_plan.hpp"
#include "host/dist/fsdp/wrap_units.hpp"
#include "host/policy/activation_probe.hpp"
#include "host/policy/peft/lora_adapters.hpp"
#include "host/policy/peft/lora_plan.hpp"
#include "host/policy/pi/paligemma_with_expert.hpp"
#include "host/policy/pi/pi_plan.hpp"
#include "host/policy/pi0/pi0_policy.hpp"
#include "host/policy/pi05/pi05_policy.hpp"
#include "test_support.hpp"

using lrhost::policy::Batch;
using lrhost::policy::PlannedPolicy;
using lrhost::policy::pi::PiConfigFields;
using lrhost::policy::pi::PiGeometry;
using lrhost::policy::pi::PiVariant;
using nlohmann::json;

namespace {

json tiny_table(const std::string& type, const std::string& dtype, const std::string& freeze) {
  auto table = lrhost::test::tiny_pi_table(type);
  table["dtype"] = dtype;
  table["freeze_vision_encoder"] = freeze == "vision";
  table["train_expert_only"] = freeze == "expert";
  return table;
}

std::shared_ptr<lrhost::policy::pi::PiPolicy> build(const json& table,
                                                    std::optional<PiGeometry> geometry = std::nullopt) {
  if (table["type"] == "pi0")
    return std::make_shared<lrhost::policy::pi0::PI0Policy>(lrhost::policy::pi0::PI0Config::from_json(table),
                                                            std::move(geometry));
  return std::make_shared<lrhost::policy::pi05::PI05Policy>(lrhost::policy::pi05::PI05Config::from_json(table),
                                                            std::move(geometry));
}

PiVariant variant_of(const json& table) {
  return table["type"] == "pi0" ? PiVariant::pi0 : PiVariant::pi05;
}

using Described = std::map<std::string, std::tuple<std::vector<int64_t>, c10::ScalarType, bool>>;

Described describe(const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  Described out;
  for (const auto& [name, p] : params) out[name] = {p.sizes().vec(), p.scalar_type(), p.requires_grad()};
  return out;
}

json plan_config(int64_t dp_shard) {
  return {{"batch_size", 4},
          {"steps", 100},
          {"accelerator", {{"mixed_precision", "bf16"}, {"fsdp", {{"reshard_after_forward", true}}}}},
          {"parallelism", {{"dp_shard", dp_shard}, {"dp_replicate", 1}}}};
}

}  // namespace

TEST_CASE("pi plan: the planned description is the built policy, parameter by parameter and unit by unit") {
  for (const std::string type : {"pi0", "pi05"})
    for (const std::string dtype : {"float32", "bfloat16"})
      for (const std::string freeze : {"none", "vision", "expert"}) {
        CAPTURE(type);
        CAPTURE(dtype);
        CAPTURE(freeze);
        const auto table = tiny_table(type, dtype, freeze);
        auto policy = build(table);
        const auto planned =
            lrhost::policy::pi::plan_pi_parameters(variant_of(table), policy->pi_config(), policy->geometry());
        std::vector<std::pair<std::string, torch::Tensor>> built;
        for (const auto& item : policy->named_parameters()) built.emplace_back(item.key(), item.value());
        CHECK((describe(planned.parameters()) == describe(built)));

        const auto units = lrhost::dist::fsdp::find_wrap_units(*policy, {});
        REQUIRE(units.size() == planned.units.size() + 1);  // + the root unit
        for (std::size_t i = 0; i < planned.units.size(); ++i) {
          CHECK(units[i].path == planned.units[i].path);
          CHECK(units[i].module_type == planned.units[i].module_type);
          CHECK((describe(units[i].params) == describe(planned.units[i].params)));
        }
        CHECK((describe(units.back().params) == describe(planned.root)));

        // The plan's figures from the description equal those from the policy.
        for (int64_t shard : {1, 4}) {
          const auto a = lrhost::accel::make_memory_plan(planned, plan_config(shard), 4);
          const auto b = lrhost::accel::make_memory_plan(*policy, plan_config(shard), 4);
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
        // ZeRO-3's gathered peak: the root unit and two of the largest (VLM layer, expert layer) pairs,
        // which the joint attention gathers together.
        const auto plan = lrhost::accel::make_memory_plan(planned, plan_config(4), 4);
        int64_t root = 0, pair = 0;
        std::map<std::string, int64_t> pairs;
        for (const auto& unit : plan.units) {
          int64_t bytes = 0;
          for (const auto& p : unit.params) bytes += p.numel() * 2;  // gathered in bf16 (plan_config)
          if (unit.module_type == "root")
            root += bytes;
          else
            pairs[lrhost::policy::pi::layer_pair_of(unit.name)] += bytes;
        }
        for (const auto& [name, bytes] : pairs) pair = std::max(pair, bytes);
        CHECK(pairs.size() == 2 + 2);  // two layer pairs and two SigLIP layers
        const auto zero3 = std::find_if(plan.strategies.begin(), plan.strategies.end(),
                                        [](const auto& s) { return s.name == "zero-3"; });
        REQUIRE(zero3 != plan.strategies.end());
        CHECK(zero3->peak_gathered_bytes == root + 2 * pair);
      }
}

TEST_CASE("pi plan: activations extrapolated from 1-2 layer models equal a measurement at the real depth") {
  for (const bool checkpointing : {false, true}) {
    CAPTURE(checkpointing);
    auto table = tiny_table("pi05", "float32", "none");
    table["gradient_checkpointing"] = checkpointing;
    auto policy = build(table);
    const auto planned =
        lrhost::policy::pi::plan_pi_policy(PiVariant::pi05, policy->pi_config(), policy->geometry(),
                                           [&](const PiGeometry& small) { return build(table, small); });
    auto batch = [&](int64_t size) {
      Batch b{{"observation.state", torch::zeros({size, 3})},
              {"observation.images.top", torch::zeros({size, 3, 32, 32})},
              {"action", torch::zeros({size, 4, 2})},
              {"observation.language.tokens", torch::zeros({size, 12}, torch::kLong)},
              {"observation.language.attention_mask", torch::ones({size, 12}, torch::kBool)}};
      return b;
    };
    // With checkpointing both are the peak through the backward (layer inputs + one recomputation).
    const auto measured =
        lrhost::policy::measure_activations(*policy, batch, lrhost::policy::activation_measure(checkpointing))
            .per_sample;
    CHECK(measured > 0);
    CHECK(planned.activation_bytes_per_sample == measured);
  }
}

TEST_CASE("pi plan: LeRobot's geometry gives LeRobot's counts and memory (pi0.md §1.1, §10.1)") {
  for (const std::string type : {"pi0", "pi05"}) {
    CAPTURE(type);
    auto table = tiny_table(type, "float32", "none");
    table.erase("geometry");
    table["image_resolution"] = {224, 224};
    const auto config = type == "pi0" ? static_cast<PiConfigFields>(lrhost::policy::pi0::PI0Config::from_json(table))
                                      : static_cast<PiConfigFields>(lrhost::policy::pi05::PI05Config::from_json(table));
    const auto variant = variant_of(table);
    const auto planned =
        lrhost::policy::pi::plan_pi_parameters(variant, config, lrhost::policy::pi::pi_geometry_of(config, variant));
    // The projections are sized by max_state_dim / max_action_dim: LeRobot's counts are at 32.
    auto at_32 = table;
    at_32["max_state_dim"] = 32;
    at_32["max_action_dim"] = 32;
    const auto config32 = type == "pi0"
                              ? static_cast<PiConfigFields>(lrhost::policy::pi0::PI0Config::from_json(at_32))
                              : static_cast<PiConfigFields>(lrhost::policy::pi05::PI05Config::from_json(at_32));
    const auto full = lrhost::policy::pi::plan_pi_parameters(variant, config32,
                                                             lrhost::policy::pi::pi_geometry_of(config32, variant));
    const auto plan = lrhost::accel::make_memory_plan(full, plan_config(1), 1);
    CHECK(full.parameters().size() == (type == "pi0" ? 778u : 813u));
    CHECK(plan.parameters == (type == "pi0" ? 4028019472 : 4143404816));
    // Trainable = the parameters that receive a gradient in LeRobot (§1.1's second column).
    CHECK(plan.trainable == (type == "pi0" ? 3133186832 : 3248572176));
    CHECK(planned.parameters().size() == full.parameters().size());
  }
}

TEST_CASE("pi plan: LoRA on the planned description is add_lora_adapters on the built policy") {
  for (const std::string type : {"pi0", "pi05"})
    for (const std::string dtype : {"float32", "bfloat16"}) {
      CAPTURE(type);
      CAPTURE(dtype);
      const auto table = tiny_table(type, dtype, "none");
      auto policy = build(table);
      auto planned = lrhost::policy::pi::plan_pi_parameters(variant_of(table), policy->pi_config(), policy->geometry());
      // The planned Linears are the built policy's (in state-dict order, not module order).
      std::vector<std::string> linears;
      for (const auto& item : policy->named_modules("", false))
        if (item.value()->as<torch::nn::LinearImpl>() != nullptr) linears.push_back(item.key());
      auto planned_linears = planned.linear_modules;
      std::sort(planned_linears.begin(), planned_linears.end());
      std::sort(linears.begin(), linears.end());
      CHECK(planned_linears == linears);

      // LeRobot's default targets, a list with a module trained in full, openpi's preset (two ranks).
      for (const std::string variant : {"default", "second", "openpi"}) {
        CAPTURE(variant);
        auto peft_table = lrhost::policy::default_peft_table();
        peft_table["method_type"] = "LORA";
        if (variant != "openpi") peft_table["r"] = 4;
        if (variant == "second") {
          peft_table["target_module_names"] = {"q_proj", "down_proj"};
          peft_table["full_training_modules"] = {"action_out_proj"};
        }
        if (variant == "openpi") peft_table["preset"] = "openpi";
        const auto settings = *lrhost::policy::PeftSettings::read(peft_table, "policy.peft");
        auto adapted = build(table);
        lrhost::policy::add_lora_adapters(*adapted, settings, "base");
        auto planned_lora = planned;
        lrhost::policy::plan_lora_adapters(planned_lora, settings);
        std::vector<std::pair<std::string, torch::Tensor>> built;
        for (const auto& item : adapted->named_parameters()) built.emplace_back(item.key(), item.value());
        CHECK((describe(planned_lora.parameters()) == describe(built)));
        const auto units = lrhost::dist::fsdp::find_wrap_units(*adapted, {});
        REQUIRE(units.size() == planned_lora.units.size() + 1);
        for (std::size_t i = 0; i < planned_lora.units.size(); ++i)
          CHECK((describe(units[i].params) == describe(planned_lora.units[i].params)));
        CHECK((describe(units.back().params) == describe(planned_lora.root)));
        const auto a = lrhost::accel::make_memory_plan(planned_lora, plan_config(2), 2);
        const auto b = lrhost::accel::make_memory_plan(*adapted, plan_config(2), 2);
        CHECK(a.trainable == b.trainable);
        CHECK(a.trainable == lrhost::policy::lora_trainable_parameters(*adapted));
        for (std::size_t s = 0; s < a.strategies.size(); ++s)
          CHECK(a.strategies[s].persistent_bytes() == b.strategies[s].persistent_bytes());
      }
    }
}
