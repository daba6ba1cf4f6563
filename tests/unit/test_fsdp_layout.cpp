// FSDP layout arithmetic (row blocks, padding, flat offsets, shard/unshard round trips) and wrap-unit
// discovery (declared and recipe-named types, the root unit, and every refusal).
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/dist/fsdp/shard_layout.hpp"
#include "host/dist/fsdp/wrap_units.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::described_error;
using lrhost::test::small_mlp;

using lrhost::dist::fsdp::find_wrap_units;
using lrhost::dist::fsdp::make_param_spec;
using lrhost::dist::fsdp::make_unit_layout;
using lrhost::dist::fsdp::param_groups;
using lrhost::dist::fsdp::plan_unit_layouts;
using lrhost::dist::fsdp::shard_of;
using lrhost::dist::fsdp::unshard;
using lrhost::util::ConfigError;
using nlohmann::json;

namespace {

// A policy that declares no wrap units.
class PlainPolicy : public lrhost::policy::Policy {
 public:
  PlainPolicy() { linear_ = register_module("linear", torch::nn::Linear(3, 2)); }
  lrhost::policy::PolicyOutput forward(const lrhost::policy::Batch&) override { return {}; }
  std::string type() const override { return "plain"; }
  nlohmann::ordered_json config() const override { return {{"type", "plain"}}; }

 private:
  torch::nn::Linear linear_{nullptr};
};

}  // namespace

TEST_CASE("fsdp layout: dim-0 row blocks with padding") {
  auto weight = torch::zeros({7, 3});
  auto spec2 = make_param_spec("w", weight, 2);
  CHECK(spec2.rows == 7);
  CHECK(spec2.row_numel == 3);
  CHECK(spec2.rows_per_rank == 4);
  CHECK(spec2.shard_numel() == 12);
  CHECK(spec2.shard_shape() == std::vector<int64_t>{4, 3});
  CHECK(spec2.row_range(0) == std::pair<int64_t, int64_t>{0, 4});
  CHECK(spec2.row_range(1) == std::pair<int64_t, int64_t>{4, 7});

  auto spec4 = make_param_spec("w", weight, 4);
  CHECK(spec4.rows_per_rank == 2);
  CHECK(spec4.row_range(3) == std::pair<int64_t, int64_t>{6, 7});

  // More ranks than rows: the last ranks hold only padding.
  auto bias = torch::zeros({2});
  auto spec3 = make_param_spec("b", bias, 3);
  CHECK(spec3.rows_per_rank == 1);
  CHECK(spec3.row_range(2).first == spec3.row_range(2).second);

  auto scalar = torch::zeros({});
  auto spec_scalar = make_param_spec("s", scalar, 2);
  CHECK(spec_scalar.rows == 1);
  CHECK(spec_scalar.shard_shape() == std::vector<int64_t>{1});
}

TEST_CASE("fsdp layout: shard_of and unshard round-trip for every group size, padding is zero") {
  torch::manual_seed(0);
  for (auto shape : std::vector<std::vector<int64_t>>{{7, 3}, {5}, {}, {2, 3, 4}, {1, 9}}) {
    auto full = torch::randn(shape);
    for (int groups = 1; groups <= 5; ++groups) {
      auto spec = make_param_spec("p", full, groups);
      std::vector<torch::Tensor> shards;
      for (int r = 0; r < groups; ++r) {
        auto shard = shard_of(spec, full, r);
        CHECK(shard.sizes().vec() == spec.shard_shape());
        auto [begin, end] = spec.row_range(r);
        auto rows = shard.reshape({spec.rows_per_rank, spec.row_numel});
        if (end - begin < spec.rows_per_rank)
          CHECK(rows.narrow(0, end - begin, spec.rows_per_rank - (end - begin)).abs().sum().item<float>() == 0);
        shards.push_back(shard);
      }
      CHECK((torch::equal(unshard(spec, shards), full)));
    }
  }
}

TEST_CASE("fsdp layout: a unit's flat shard concatenates its parameters' shards") {
  auto unit = make_unit_layout("layers.0", "MlpLinear",
                               {{"layers.0.weight", torch::zeros({7, 5})}, {"layers.0.bias", torch::zeros({7})}}, 3);
  CHECK(unit.numel() == 42);
  CHECK(unit.shard_numel() == 3 * 5 + 3);
  CHECK(unit.shard_offsets() == std::vector<int64_t>{0, 15});
}

TEST_CASE("fsdp wrap units: the policy's declared types, the root unit, and recipe-named types") {
  auto mlp = small_mlp();
  auto units = find_wrap_units(*mlp, {});
  REQUIRE(units.size() == 3);  // three linear layers, no parameters left for a root unit
  CHECK(units[0].path == "layers.0");
  CHECK(units[0].module_type == "MlpLinear");
  CHECK(units[0].params.size() == 2);
  CHECK(units[0].params[0].first == "layers.0.weight");

  auto layouts = plan_unit_layouts(*mlp, {"MlpLinear"}, 2);
  REQUIRE(layouts.size() == 3);
  CHECK(layouts[0].params[0].rows_per_rank == 4);  // 7 rows over 2 ranks

  // Frozen parameters are sharded too, in groups of their own.
  for (auto& p : mlp->parameters()) p.set_requires_grad(false);
  auto frozen = find_wrap_units(*mlp, {});
  REQUIRE(frozen.size() == 3);
  auto groups = param_groups(frozen[0]);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].frozen);
  CHECK(groups[0].params.size() == 2);
  auto frozen_layouts = plan_unit_layouts(*mlp, {}, 2);
  REQUIRE(frozen_layouts.size() == 3);
  CHECK(frozen_layouts[0].frozen);
}

TEST_CASE("fsdp parameter groups: trainable before frozen, one per dtype, in order of first appearance") {
  auto mlp = small_mlp();
  auto units = find_wrap_units(*mlp, {});
  REQUIRE(units.size() == 3);
  {
    torch::NoGradGuard no_grad;
    // layers.0: weight bf16 and trainable, bias fp32 and frozen.
    units[0].params[0].second.set_data(units[0].params[0].second.to(torch::kBFloat16));
  }
  units[0].params[1].second.set_requires_grad(false);
  auto groups = param_groups(units[0]);
  REQUIRE(groups.size() == 2);
  CHECK(!groups[0].frozen);
  CHECK(groups[0].params.at(0).first == "layers.0.weight");
  CHECK(groups[1].frozen);
  CHECK(groups[1].params.at(0).first == "layers.0.bias");

  // layers.1: both trainable, two dtypes -> two trainable groups; the layouts follow the groups.
  {
    torch::NoGradGuard no_grad;
    units[1].params[1].second.set_data(units[1].params[1].second.to(torch::kBFloat16));
  }
  auto mixed = param_groups(units[1]);
  REQUIRE(mixed.size() == 2);
  CHECK((mixed[0].params.at(0).second.scalar_type() == torch::kFloat32));
  CHECK((mixed[1].params.at(0).second.scalar_type() == torch::kBFloat16));
  CHECK(!mixed[1].frozen);
  auto layouts = plan_unit_layouts(*mlp, {}, 2);
  REQUIRE(layouts.size() == 5);  // 2 + 2 + 1
  CHECK(layouts[1].frozen);
  CHECK(layouts[1].name == "layers.0");
  CHECK((layouts[3].params.at(0).dtype == torch::kBFloat16));
}

TEST_CASE("fsdp wrap units: refusals name the policy's module types") {
  auto mlp = small_mlp();
  auto unknown = described_error<ConfigError>([&] { find_wrap_units(*mlp, {"ACTEncoderLayer"}); });
  CHECK(unknown.find("'ACTEncoderLayer' matches no module of policy 'mlp'") != std::string::npos);
  CHECK(unknown.find("MlpLinear") != std::string::npos);
  CHECK(unknown.find("ReLU") != std::string::npos);

  auto unhookable = described_error<ConfigError>([&] { find_wrap_units(*mlp, {"ReLU"}); });
  CHECK(unhookable.find("'ReLU' cannot be an FSDP unit") != std::string::npos);

  auto plain = std::make_shared<PlainPolicy>();
  auto none = described_error<ConfigError>([&] { find_wrap_units(*plain, {}); });
  CHECK(none.find("declares no wrap-unit module types") != std::string::npos);
  CHECK(none.find("Linear") != std::string::npos);
}
