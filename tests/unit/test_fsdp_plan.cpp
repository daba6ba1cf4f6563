// The memory plan `lrhost show` prints (host/accel/memory_plan.hpp), checked against hand-computed
// figures for a small MLP whose layer rows do not divide by the shard group, so padding shows up:
// per-rank parameter, gradient and optimizer-state bytes per strategy, the gathered peaks, bf16,
// frozen parameters, hybrid naming, effective batch, and the refusals show surfaces (bad group
// sizes, unknown wrap modules). The dist tests (fsdp_plan_memory_*) compare the same figures with
// what training measures.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/accel/memory_plan.hpp"
#include "host/dist/fsdp/wrap_units.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::described_error;
using lrhost::test::small_mlp;

using lrhost::accel::make_memory_plan;
using lrhost::accel::MemoryPlan;
using lrhost::accel::StrategyMemory;
using nlohmann::json;

namespace {

const StrategyMemory& strategy(const MemoryPlan& plan, const std::string& name) {
  for (const auto& s : plan.strategies)
    if (s.name == name) return s;
  FAIL("no strategy " << name);
  return plan.strategies.front();
}

json fsdp_config(int dp_shard, int dp_replicate = 1, bool reshard = true) {
  return json{{"batch_size", 4},
              {"parallelism", {{"dp_shard", dp_shard}, {"dp_replicate", dp_replicate}}},
              {"accelerator", {{"fsdp", {{"reshard_after_forward", reshard}}}}},
              {"optimizer", {{"lr", 0.25}}}};
}

}  // namespace

TEST_CASE("fsdp plan: padded shard bytes per strategy for rows that do not divide by the group") {
  auto mlp = small_mlp();
  auto plan = make_memory_plan(*mlp, fsdp_config(-1), 2);
  CHECK(plan.strategy == "fsdp zero-3 (dp_shard 2 x dp_replicate 1)");
  CHECK(plan.parameters == 89);
  CHECK(plan.trainable == 89);
  CHECK(plan.optimizer == lrhost::optim::OptimizerKind::adamw);  // the policy's preset, lr from the recipe's table
  CHECK(plan.lr == 0.25);
  CHECK(plan.effective_batch == 8);
  REQUIRE(plan.units.size() == 3);
  // Padded shards: 7 rows -> 4 per rank, 4 -> 2, 3 -> 2. Layer 0: 4*5 + 4, layer 1: 2*7 + 2, layer 2: 2*4 + 2.
  CHECK(plan.units[0].shard_numel() == 24);
  CHECK(plan.units[1].shard_numel() == 16);
  CHECK(plan.units[2].shard_numel() == 10);
  const int64_t shard = 24 + 16 + 10;  // 50 > 89 / 2: padding is counted
  REQUIRE(plan.strategies.size() == 3);
  CHECK(plan.strategies[0].name == "zero-3");  // the selected strategy first

  auto zero3 = strategy(plan, "zero-3");
  CHECK(zero3.shard_size == 2);
  CHECK(zero3.parameter_bytes == 4 * shard);
  CHECK(zero3.gradient_bytes == 4 * shard);
  CHECK(zero3.optimizer_bytes == 8 * shard);  // AdamW: two fp32 moments
  CHECK(zero3.persistent_bytes() == 16 * shard);
  CHECK(zero3.peak_gathered_bytes == 4 * 2 * 42);  // no root unit; running + prefetched largest unit
  // The ZeRO-3 bound: a rank holds at most its share of the model plus one (padded) unit.
  CHECK(zero3.parameter_bytes <= 4 * 89 / 2 + 4 * 42);

  auto zero2 = strategy(plan, "zero-2");
  CHECK(zero2.parameter_bytes == 4 * shard);
  CHECK(zero2.peak_gathered_bytes == 4 * 89);  // the whole model stays gathered

  auto ddp = strategy(plan, "ddp");
  CHECK(ddp.shard_size == 1);
  CHECK(ddp.parameter_bytes == 4 * 89);
  CHECK(ddp.gradient_bytes == 4 * 89);
  CHECK(ddp.optimizer_bytes == 8 * 89);
  CHECK(ddp.peak_gathered_bytes == 0);

  // The figures are the layouts' own padded sizes (what the engine's shard tensors hold).
  int64_t from_layouts = 0;
  for (const auto& unit : lrhost::dist::fsdp::plan_unit_layouts(*mlp, {}, 2)) from_layouts += unit.shard_numel();
  CHECK(from_layouts == shard);
}

TEST_CASE("fsdp plan: three-way group, ZeRO-2 selected, bf16 gathers, SGD state") {
  auto mlp = small_mlp();
  auto config = fsdp_config(3, 1, /*reshard=*/false);
  config["accelerator"]["mixed_precision"] = "bf16";
  config["accelerator"]["gradient_accumulation_steps"] = 2;
  config["optimizer"] = {{"type", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}};
  auto plan = make_memory_plan(*mlp, config, 3);
  CHECK(plan.strategy == "fsdp zero-2 (dp_shard 3 x dp_replicate 1)");
  CHECK(plan.strategies[0].name == "zero-2");
  CHECK(plan.effective_batch == 4 * 3 * 2);
  // 7 rows -> 3 per rank, 4 -> 2, 3 -> 1: (15 + 3) + (14 + 2) + (4 + 1).
  const int64_t shard = 18 + 16 + 5;
  auto zero2 = strategy(plan, "zero-2");
  CHECK(zero2.parameter_bytes == 4 * shard);  // fp32 master shards even under bf16
  CHECK(zero2.gradient_bytes == 4 * shard);
  CHECK(zero2.optimizer_bytes == 4 * shard);   // SGD momentum: one buffer
  CHECK(zero2.peak_gathered_bytes == 2 * 89);  // bf16
  CHECK(strategy(plan, "zero-3").peak_gathered_bytes == 2 * 2 * 42);

  config["optimizer"] = {{"type", "sgd"}, {"lr", 0.1}};
  auto plain = make_memory_plan(*mlp, config, 3);
  for (const auto& s : plain.strategies) CHECK(s.optimizer_bytes == 0);

  // amsgrad keeps a third fp32 buffer (the running maximum of exp_avg_sq).
  config["optimizer"] = {{"type", "adamw"}, {"lr", 0.1}, {"amsgrad", true}};
  CHECK(strategy(make_memory_plan(*mlp, config, 3), "zero-2").optimizer_bytes == 12 * shard);
}

TEST_CASE("fsdp plan: DDP selected, hybrid naming, frozen parameters in full on every rank") {
  auto mlp = small_mlp();
  auto ddp_plan = make_memory_plan(*mlp, json{{"batch_size", 2}}, 2);
  CHECK(ddp_plan.strategy == "ddp");
  CHECK(ddp_plan.strategies[0].name == "ddp");
  CHECK(ddp_plan.effective_batch == 4);
  CHECK(ddp_plan.units.front().shard_size == 2);  // the ZeRO comparison uses every rank

  auto hybrid = make_memory_plan(*mlp, fsdp_config(2, 2), 4);
  CHECK(hybrid.strategy == "fsdp zero-3 hybrid (dp_shard 2 x dp_replicate 2)");
  CHECK(hybrid.strategies[0].name == "hybrid zero-3");
  CHECK(hybrid.strategies[0].shard_size == 2);
  CHECK(hybrid.strategies[0].parameter_bytes == 4 * 50);  // shards of a 2-rank group, not 4
  CHECK(hybrid.effective_batch == 16);

  // The last layer frozen: FSDP shards it too (10 padded elements per rank), without gradients or
  // optimizer state; DDP keeps it whole.
  // (The units are held in a variable: a range-for over a member of a temporary would dangle.)
  const auto units = lrhost::dist::fsdp::find_wrap_units(*mlp, {});
  for (auto& [name, param] : units.back().params) param.set_requires_grad(false);
  auto frozen = make_memory_plan(*mlp, fsdp_config(2), 2);
  CHECK(frozen.trainable == 74);
  REQUIRE(frozen.units.size() == 3);
  CHECK(frozen.units[2].frozen);
  auto zero3 = strategy(frozen, "zero-3");
  CHECK(zero3.parameter_bytes == 4 * (24 + 16) + 4 * 10);
  CHECK(zero3.gradient_bytes == 4 * (24 + 16));
  CHECK(zero3.optimizer_bytes == 8 * (24 + 16));
  CHECK(strategy(frozen, "ddp").parameter_bytes == 4 * 89);
  CHECK(strategy(frozen, "ddp").gradient_bytes == 4 * 74);

  // A bf16 layer counts 2 bytes per element for its parameters, gradients and optimizer state.
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, param] : units.front().params) param.set_data(param.to(torch::kBFloat16));
  }
  auto bf16 = make_memory_plan(*mlp, fsdp_config(2), 2);
  auto bf16_zero3 = strategy(bf16, "zero-3");
  CHECK(bf16_zero3.parameter_bytes == 2 * 24 + 4 * 16 + 4 * 10);
  CHECK(bf16_zero3.gradient_bytes == 2 * 24 + 4 * 16);
  CHECK(bf16_zero3.optimizer_bytes == 2 * (2 * 24 + 4 * 16));
  CHECK(strategy(bf16, "ddp").parameter_bytes == 2 * 42 + 4 * 47);
  // The text form names each group's type, frozen or not, and dtype.
  auto text = lrhost::accel::render_memory_plan(bf16);
  CHECK(text.find("MlpLinear bfloat16") != std::string::npos);
  CHECK(text.find("MlpLinear frozen float32") != std::string::npos);
}

TEST_CASE("fsdp plan: text and JSON forms") {
  auto mlp = small_mlp();
  auto plan = make_memory_plan(*mlp, fsdp_config(-1), 2);
  auto text = lrhost::accel::render_memory_plan(plan);
  CHECK(text.find("plan for 2 rank(s): fsdp zero-3 (dp_shard 2 x dp_replicate 1)") != std::string::npos);
  CHECK(text.find("MlpLinear") != std::string::npos);
  CHECK(text.find("<- this config") != std::string::npos);
  CHECK(text.find("effective batch 8") != std::string::npos);
  auto j = lrhost::accel::memory_plan_json(plan);
  CHECK((j["world_size"] == 2));
  CHECK((j["units"].size() == 3));
  CHECK((j["units"][0]["shard_numel"] == 24));
  CHECK((j["strategies"][0]["name"] == "zero-3"));
  CHECK((j["strategies"][0]["persistent_bytes"] == 16 * 50));
  CHECK((j["strategies"][0]["peak_gathered_bytes"] == 336));
}

TEST_CASE("fsdp plan: the largest batch per rank that fits a GPU's memory") {
  auto mlp = small_mlp();
  auto plan = make_memory_plan(*mlp, fsdp_config(-1), 2);
  const auto& zero3 = plan.strategies.front();
  const int64_t gpu = int64_t{2} << 30;  // 2 GiB: 1.1 GiB of it is the reserve
  CHECK(lrhost::accel::gpu_reserve_bytes(gpu) == (int64_t{1} << 30) + gpu / 20);
  CHECK(lrhost::accel::largest_batch_per_rank(plan, zero3, gpu) == -1);  // activations not measured
  plan.activation_bytes_per_sample = 1 << 20;
  const int64_t free =
      gpu - lrhost::accel::gpu_reserve_bytes(gpu) - zero3.persistent_bytes() - zero3.peak_gathered_bytes;
  CHECK(lrhost::accel::largest_batch_per_rank(plan, zero3, gpu) == free / (1 << 20));
  plan.activation_bytes_per_sample = gpu;  // one sample needs more than the card
  CHECK(lrhost::accel::largest_batch_per_rank(plan, zero3, gpu) == 0);
  plan.activation_bytes_per_sample = 1 << 20;
  plan.gpu_memory_bytes = {gpu};
  const auto text = lrhost::accel::render_memory_plan(plan);
  CHECK(text.find("largest batch per rank in 2.0 GiB per GPU") != std::string::npos);
  CHECK(text.find("zero-3 " + std::to_string(free / (1 << 20)) + " <- this config") != std::string::npos);
  CHECK((lrhost::accel::memory_plan_json(plan)["strategies"][0]["largest_batch_per_rank"][0] == free / (1 << 20)));
}

TEST_CASE("fsdp plan: refusals") {
  auto mlp = small_mlp();
  auto sizes = described_error<lrhost::util::ConfigError>([&] { make_memory_plan(*mlp, fsdp_config(3), 2); });
  CHECK(sizes.find("dp_shard (3) x dp_replicate (1) must equal the number of ranks (2)") != std::string::npos);

  auto config = fsdp_config(2);
  config["accelerator"]["fsdp"]["wrap_modules"] = {"Nope"};
  auto unknown = described_error<lrhost::util::ConfigError>([&] { make_memory_plan(*mlp, config, 2); });
  CHECK(unknown.find("'Nope' matches no module of policy 'mlp'") != std::string::npos);
  CHECK(unknown.find("MlpLinear") != std::string::npos);
}
