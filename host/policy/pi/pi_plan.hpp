// pi0/pi05 described for the memory plan without building them (planned_policy.hpp): at LeRobot's size
// the policy holds 4 B parameters (16 GB in fp32), which `lrhost show` must not allocate to count. The
// parameters come from the state-dict layout (nn::paligemma_with_expert_layout plus the policy's own
// projections) with the dtype of each mode (LeRobot's bf16 split by the same name rules as
// to_bfloat16_for_selected_params), requires_grad as PaliGemmaWithExpert freezes them, and the units
// the spec declares. Activations per sample are measured, not modelled: training forwards of
// full-width models with one or two layer pairs and one or two SigLIP layers (small vocabularies: the
// embedding rows do not change activations), extrapolated linearly to the real depths — each layer
// pair and each SigLIP layer adds the same bytes per sample.
#pragma once
#include <functional>
#include <memory>

#include "host/policy/pi/pi_flow_matching.hpp"
#include "host/policy/pi/pi_geometry.hpp"
#include "host/policy/pi/pi_policy.hpp"
#include "host/policy/planned_policy.hpp"

namespace lrhost::policy::pi {

// The parameters and units alone (no activation figure): what tests compare with a built policy.
PlannedPolicy plan_pi_parameters(PiVariant variant, const PiConfigFields& config, const PiGeometry& geometry);

// Builds the policy of this type at another geometry (the activation probe's small models).
using PiPolicyAtGeometry = std::function<std::shared_ptr<PiPolicy>(const PiGeometry& geometry)>;

// plan_pi_parameters plus the measured activations per sample (see above).
PlannedPolicy plan_pi_policy(PiVariant variant, const PiConfigFields& config, const PiGeometry& geometry,
                             const PiPolicyAtGeometry& build);

}  // namespace lrhost::policy::pi
