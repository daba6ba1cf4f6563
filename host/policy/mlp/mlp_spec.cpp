// The MLP policy's entry in the policy registry (policy_spec.hpp): lrhost's smallest policy (no
// LeRobot counterpart, so no lerobot-train mapping), every linear layer an FSDP unit (the root unit is
// then empty).
#include "host/policy/mlp/mlp_policy.hpp"
#include "host/policy/policy_spec.hpp"

namespace lrhost::policy::mlp {

const PolicySpec& spec() {
  static const PolicySpec entry{
      .type = "mlp",
      .create = make_mlp_policy,
      .default_config = [] { return MlpConfig{}.to_json(); },
      .weight_shape_fields = {},
      .processors = ProcessorPipeline::lerobot_default(),
      .fsdp_wrap_module_types = {"MlpLinear"},
      .lerobot_train = std::nullopt,
  };
  return entry;
}

}  // namespace lrhost::policy::mlp
