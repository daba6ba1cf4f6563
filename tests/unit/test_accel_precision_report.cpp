// The precision startup line: bf16 weights without autocast are said, as a warning naming
// lerobot-train's setting; the other combinations name what runs.
#include <doctest/doctest.h>

#include "host/accel/precision_report.hpp"
#include "test_support.hpp"

using lrhost::accel::describe_precision;
using lrhost::accel::MixedPrecision;
using lrhost::test::contains;

TEST_CASE("precision report: bf16 weights without autocast warn and name lerobot-train's bf16 autocast") {
  auto report = describe_precision({torch::kBFloat16, torch::kBFloat16}, MixedPrecision::no);
  CHECK(report.warn);
  CHECK(report.text ==
        "policy weights bfloat16, accelerator.mixed_precision=no: forward and backward run in the bfloat16 weights "
        "without autocast; LeRobot's lerobot-train adds bf16 autocast for such a policy (set "
        "accelerator.mixed_precision=bf16 to match it)");
  // Partly bf16 (e.g. a float32 action expert): both named, still a warning.
  auto mixed = describe_precision({torch::kFloat32, torch::kBFloat16}, MixedPrecision::no);
  CHECK(mixed.warn);
  CHECK(contains(mixed.text, "policy weights bfloat16 and float32, accelerator.mixed_precision=no"));
}

TEST_CASE("precision report: float32 weights and autocast runs are said without a warning") {
  auto plain = describe_precision({torch::kFloat32}, MixedPrecision::no);
  CHECK_FALSE(plain.warn);
  CHECK(plain.text ==
        "policy weights float32, accelerator.mixed_precision=no: forward and backward in float32, no autocast");
  auto bf16 = describe_precision({torch::kBFloat16}, MixedPrecision::bf16);
  CHECK_FALSE(bf16.warn);
  CHECK(bf16.text ==
        "policy weights bfloat16, accelerator.mixed_precision=bf16: forward and backward under bf16 autocast");
  CHECK(contains(describe_precision({torch::kFloat32}, MixedPrecision::fp16).text, "fp16 autocast with loss scaling"));
}
