// pi0/pi05 planned from their config: the meta parameter table, the units, measured activations.
#include "host/policy/pi/pi_plan.hpp"

#include <spdlog/spdlog.h>

#include "host/nn/paligemma_layout.hpp"
#include "host/policy/activation_probe.hpp"

namespace lrhost::policy::pi {
namespace {

const std::string kModel = "model.";
const std::string kWithExpert = "model.paligemma_with_expert.";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// LeRobot's to_bfloat16_for_selected_params: these names stay fp32, the rest of PaliGemmaWithExpert
// goes bf16 (the same substring rules; "model.norm" also matches "language_model.norm").
bool stays_fp32(const std::string& key) {
  for (const char* part :
       {"vision_tower", "multi_modal_projector", "input_layernorm", "post_attention_layernorm", "model.norm"})
    if (contains(key, part)) return true;
  return false;
}

// requires_grad as PaliGemmaWithExpert sets it; `key` is relative to paligemma_with_expert.
bool trainable(const std::string& key, const PiConfigFields& config, int64_t last_vlm_layer) {
  if (contains(key, "lm_head.") || key.starts_with("paligemma.model.language_model.norm.")) return false;
  const std::string last = "paligemma.model.language_model.layers." + std::to_string(last_vlm_layer) + ".";
  if (key.starts_with(last) &&
      (contains(key, "self_attn.o_proj.") || contains(key, ".mlp.") || contains(key, "post_attention_layernorm.")))
    return false;
  if (config.freeze_vision_encoder && contains(key, "vision_tower.")) return false;
  if (config.train_expert_only && key.starts_with("paligemma.")) return false;
  return true;
}

// The unit a key (relative to paligemma_with_expert) belongs to: its module path and type, or empty
// for the root unit.
std::pair<std::string, std::string> unit_of(const std::string& key) {
  const std::pair<const char*, const char*> stacks[] = {
      {"paligemma.model.vision_tower.vision_model.encoder.layers.", "SiglipEncoderLayer"},
      {"paligemma.model.language_model.layers.", "GemmaDecoderLayer"},
      {"gemma_expert.model.layers.", "GemmaDecoderLayer"}};
  for (const auto& [stack, type] : stacks) {
    const std::string prefix = stack;
    if (!key.starts_with(prefix)) continue;
    const auto end = key.find('.', prefix.size());
    return {kWithExpert + key.substr(0, end), type};
  }
  return {};
}

}  // namespace

PlannedPolicy plan_pi_parameters(PiVariant variant, const PiConfigFields& config, const PiGeometry& geometry) {
  PlannedPolicy planned;
  planned.type = variant == PiVariant::pi0 ? "pi0" : "pi05";
  const bool bf16 = config.dtype == "bfloat16";
  const int64_t last_vlm_layer = geometry.paligemma.text.num_hidden_layers - 1;
  for (const auto& entry : nn::paligemma_with_expert_layout(geometry.paligemma, geometry.expert)) {
    const auto dtype = bf16 && !stays_fp32(entry.key) ? torch::kBFloat16 : torch::kFloat32;
    auto param = meta_parameter(entry.shape, dtype, trainable(entry.key, config, last_vlm_layer));
    // The layout's 2-D weights are Linears' but for the embedding tables.
    if (entry.key.ends_with(".weight") && entry.shape.size() == 2 && !contains(entry.key, "embed"))
      planned.linear_modules.push_back(kWithExpert + entry.key.substr(0, entry.key.size() - 7));
    const auto [path, type] = unit_of(entry.key);
    if (path.empty()) {
      planned.root.emplace_back(kWithExpert + entry.key, param);
      continue;
    }
    if (planned.units.empty() || planned.units.back().path != path) planned.units.push_back({path, type, {}});
    planned.units.back().params.emplace_back(kWithExpert + entry.key, param);
  }
  // The policy's own projections, outside PaliGemmaWithExpert: fp32 in both modes, always trained.
  const int64_t width = geometry.expert.hidden_size;
  auto linear = [&](const std::string& name, int64_t in, int64_t out) {
    planned.linear_modules.push_back(kModel + name);
    planned.root.emplace_back(kModel + name + ".weight", meta_parameter({out, in}, torch::kFloat32, true));
    planned.root.emplace_back(kModel + name + ".bias", meta_parameter({out}, torch::kFloat32, true));
  };
  linear("action_in_proj", config.max_action_dim, width);
  linear("action_out_proj", width, config.max_action_dim);
  if (variant == PiVariant::pi0) {
    linear("state_proj", config.max_state_dim, width);
    linear("action_time_mlp_in", 2 * width, width);
    linear("action_time_mlp_out", width, width);
  } else {
    linear("time_mlp_in", width, width);
    linear("time_mlp_out", width, width);
  }
  planned.optimizer_preset = pi_optimizer_preset(config);
  planned.scheduler_preset = pi_scheduler_preset(config);
  return planned;
}

PlannedPolicy plan_pi_policy(PiVariant variant, const PiConfigFields& config, const PiGeometry& geometry,
                             const PiPolicyAtGeometry& build) {
  auto planned = plan_pi_parameters(variant, config, geometry);
  // Full widths, `pairs` layer pairs, `vision` SigLIP layers, vocabularies of 1024.
  auto measure = [&](int64_t pairs, int64_t vision, ActivationMeasure what) {
    PiGeometry small = geometry;
    small.paligemma.text.num_hidden_layers = pairs;
    small.expert.num_hidden_layers = pairs;
    small.paligemma.vision.num_hidden_layers = vision;
    small.paligemma.text.vocab_size = 1024;
    small.expert.vocab_size = 1024;
    small.custom = true;
    auto policy = build(small);
    // example_batch without the tokenizer (planning needs none): the language at tokenizer_max_length.
    auto batch = [&](int64_t size) {
      Batch b;
      for (const auto& feature : policy->features().inputs) {
        std::vector<int64_t> shape{size};
        shape.insert(shape.end(), feature.shape.begin(), feature.shape.end());
        b[feature.key] = torch::zeros(shape);
      }
      const auto* action = config.action_feature();
      b[action->key] = torch::zeros({size, config.chunk_size, action->shape[0]});
      b["observation.language.tokens"] = torch::zeros({size, config.tokenizer_max_length}, torch::kLong);
      b["observation.language.attention_mask"] = torch::ones({size, config.tokenizer_max_length}, torch::kBool);
      return b;
    };
    return measure_activations(*policy, batch, what).per_sample;
  };
  // What the forward keeps grows by one layer's share per layer: extrapolated from 1-2 layers.
  const auto kept = ActivationMeasure::kept_for_backward;
  const auto base = measure(1, 1, kept);
  const auto per_pair = measure(2, 1, kept) - base;
  const auto per_vision_layer = measure(1, 2, kept) - base;
  planned.activation_bytes_per_sample = base + (geometry.paligemma.text.num_hidden_layers - 1) * per_pair +
                                        (geometry.paligemma.vision.num_hidden_layers - 1) * per_vision_layer;
  // With checkpointing the backward's peak adds one layer pair's recomputation (and its backward) to
  // what is kept, the same at every depth from 2 pairs on (a 1-pair model peaks elsewhere): measured
  // on the 2-pair model.
  int64_t recompute = 0;
  if (config.gradient_checkpointing) recompute = measure(2, 1, ActivationMeasure::backward_peak) - (base + per_pair);
  planned.activation_bytes_per_sample += recompute;
  planned.activation_note =
      std::string(
          "measured on CPU: training forwards at batch 1 and 2 of full-width models with 1-2 layer "
          "pairs and 1-2 SigLIP layers, extrapolated to ") +
      std::to_string(geometry.paligemma.text.num_hidden_layers) + " pairs and " +
      std::to_string(geometry.paligemma.vision.num_hidden_layers) + " SigLIP layers" +
      (config.gradient_checkpointing
           ? ", plus one layer pair's recomputation during backward (the peak through forward and backward of "
             "the 2-pair model, less what it keeps)"
           : "");
  spdlog::debug(
      "pi plan: activations {} base + {} per layer pair + {} per SigLIP layer + {} recomputed, bytes per sample", base,
      per_pair, per_vision_layer, recompute);
  return planned;
}

}  // namespace lrhost::policy::pi
