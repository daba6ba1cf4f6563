// GR00T N1.7 described for the memory plan without building it (planned_policy.hpp): at LeRobot's size
// the policy holds 3.1 B parameters (12.6 GB in fp32), which `lrhost show` must not allocate only to
// count them. The description is the module tree GrootPolicy builds (groot_model.hpp: the Qwen3-VL
// backbone cut to select_layer text layers, the action head) written out from the geometry: every
// parameter's name and shape, fp32 (model_params_fp32), requires_grad as GrootPolicy's tuning
// switches set it, grouped by the spec's FSDP units (Qwen3VisionBlock, Qwen3TextDecoderLayer,
// BasicTransformerBlock). A unit test holds it equal to the built policy at the tiny geometry, tensor
// by tensor. Planning reads config.json alone: no weights, and no tokenizer (GrootPolicy resolves
// tokenizer_name only for its processors). Activations per sample are measured, not modelled, as
// pi_plan.hpp does: training forwards of full-width models a few blocks deep in each stack (small
// vocabularies: embedding rows change no activation), extrapolated linearly to the real depths —
// every vision block, text layer and vl_self_attention block, and every cycle of four DiT blocks,
// adds the same bytes per sample.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "host/policy/groot/groot_config.hpp"
#include "host/policy/groot/groot_geometry.hpp"
#include "host/policy/groot/groot_model.hpp"
#include "host/policy/groot/groot_policy.hpp"
#include "host/policy/planned_policy.hpp"
#include "host/policy/policy_features.hpp"

namespace lrhost::policy::groot {

// The parameters, units, Linear modules and presets of the policy `config` builds at `model`.
PlannedPolicy plan_groot_parameters(const GrootConfig& config, const GrootModelConfig& model);

// Builds the policy at another geometry (the activation probe's small models).
using GrootPolicyAtGeometry = std::function<std::shared_ptr<GrootPolicy>(const GrootGeometry& geometry)>;

// plan_groot_parameters plus the measured activations per sample (see above); the note says why not
// where the probe models cannot stand for the model (depths below theirs, tune_top_llm_layers > 3).
PlannedPolicy plan_groot_policy(const GrootConfig& config, const GrootGeometry& geometry,
                                const GrootPolicyAtGeometry& build);

// The spec's plan_without_building: LeRobot's geometry (policy.geometry empty: base_model_path's
// config.json and the hard-coded Cosmos-Reason2-2B backbone) is planned from config.json; a
// `geometry` folder (lrhost's tiny models) returns nullopt, so it is built and its activations measured.
// Refuses what GrootPolicy's constructor refuses about the dims (ConfigError).
// `adapt_probe` (may be empty) is applied to every probe model (the run's LoRA adapters).
std::optional<PlannedPolicy> plan_groot_without_building(const nlohmann::json& config, const PolicyFeatures& features,
                                                         const std::function<void(Policy&)>& adapt_probe);

}  // namespace lrhost::policy::groot
