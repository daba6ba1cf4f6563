// GR00T N1.7 planned from its config: the module tree written out as meta parameters; see groot_plan.hpp.
#include "host/policy/groot/groot_plan.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "host/policy/activation_probe.hpp"
#include "host/policy/groot/groot_geometry.hpp"

namespace lrhost::policy::groot {
namespace {

// Appends parameters in module order, each to the unit opened last (or to the root), under the
// prefix of the module being written; records Linear modules for LoRA planning.
class GrootLayoutWriter {
 public:
  explicit GrootLayoutWriter(PlannedPolicy& out) : out_(out) {}

  // Parameters written until end_unit belong to the wrap unit at `path` (a module path).
  void begin_unit(const std::string& path, const std::string& module_type) {
    out_.units.push_back({path, module_type, {}});
    in_unit_ = true;
  }
  void end_unit() { in_unit_ = false; }

  void param(const std::string& name, const std::vector<int64_t>& shape, bool trainable) {
    auto tensor = meta_parameter(shape, torch::kFloat32, trainable);  // model_params_fp32: all fp32
    (in_unit_ ? out_.units.back().params : out_.root).emplace_back(name, tensor);
  }
  // torch::nn::Linear(in, out): weight [out, in], bias [out].
  void linear(const std::string& name, int64_t in, int64_t out, bool bias, bool trainable) {
    out_.linear_modules.push_back(name);
    param(name + ".weight", {out, in}, trainable);
    if (bias) param(name + ".bias", {out}, trainable);
  }
  // torch::nn::LayerNorm with its affine weight and bias.
  void layer_norm(const std::string& name, int64_t dim, bool trainable) {
    param(name + ".weight", {dim}, trainable);
    param(name + ".bias", {dim}, trainable);
  }
  // CategorySpecificLinear: W [categories, in, out] (in x out, as bmm takes it), b [categories, out].
  void category_linear(const std::string& name, int64_t categories, int64_t in, int64_t out, bool trainable) {
    param(name + ".W", {categories, in, out}, trainable);
    param(name + ".b", {categories, out}, trainable);
  }

 private:
  PlannedPolicy& out_;
  bool in_unit_ = false;
};

const std::string kGrootVisual = "_groot_model.backbone.model.model.visual.";
const std::string kGrootLanguage = "_groot_model.backbone.model.model.language_model.";
const std::string kGrootHead = "_groot_model.action_head.";

// Qwen3VLVisionModel: patch embedding, position grid, the blocks (units), the merger and the
// DeepStack mergers (post-shuffle norm over the merged width).
void write_groot_vision(GrootLayoutWriter& w, const nn::Qwen3VLVisionConfig& v, bool trainable) {
  const std::string& p = kGrootVisual;
  w.param(p + "patch_embed.proj.weight",
          {v.hidden_size, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size}, trainable);
  w.param(p + "patch_embed.proj.bias", {v.hidden_size}, trainable);
  w.param(p + "pos_embed.weight", {v.num_position_embeddings, v.hidden_size}, trainable);
  for (int64_t j = 0; j < v.depth; ++j) {
    const std::string block = p + "blocks." + std::to_string(j);
    w.begin_unit(block, "Qwen3VisionBlock");
    w.layer_norm(block + ".norm1", v.hidden_size, trainable);
    w.layer_norm(block + ".norm2", v.hidden_size, trainable);
    w.linear(block + ".attn.qkv", v.hidden_size, 3 * v.hidden_size, true, trainable);
    w.linear(block + ".attn.proj", v.hidden_size, v.hidden_size, true, trainable);
    w.linear(block + ".mlp.linear_fc1", v.hidden_size, v.intermediate_size, true, trainable);
    w.linear(block + ".mlp.linear_fc2", v.intermediate_size, v.hidden_size, true, trainable);
    w.end_unit();
  }
  const int64_t merged = v.hidden_size * v.spatial_merge_size * v.spatial_merge_size;
  auto merger = [&](const std::string& name, int64_t norm_width) {
    w.layer_norm(name + ".norm", norm_width, trainable);
    w.linear(name + ".linear_fc1", merged, merged, true, trainable);
    w.linear(name + ".linear_fc2", merged, v.out_hidden_size, true, trainable);
  };
  merger(p + "merger", v.hidden_size);
  for (std::size_t k = 0; k < v.deepstack_visual_indexes.size(); ++k)
    merger(p + "deepstack_merger_list." + std::to_string(k), merged);
}

// Qwen3VLTextModel with `layers` decoder layers (units); no lm_head (tied and unused: groot_model.hpp).
// tune_top_llm_layers sets the last layers back to trainable.
void write_groot_language(GrootLayoutWriter& w, const nn::Qwen3VLTextConfig& t, int64_t layers,
                          const GrootConfig& config) {
  const std::string& p = kGrootLanguage;
  const bool tuned = config.tune_llm;
  w.param(p + "embed_tokens.weight", {t.vocab_size, t.hidden_size}, tuned);
  const int64_t q_width = t.num_attention_heads * t.head_dim, kv_width = t.num_key_value_heads * t.head_dim;
  for (int64_t i = 0; i < layers; ++i) {
    const bool trainable = tuned || i >= layers - config.tune_top_llm_layers;
    const std::string layer = p + "layers." + std::to_string(i);
    w.begin_unit(layer, "Qwen3TextDecoderLayer");
    w.linear(layer + ".self_attn.q_proj", t.hidden_size, q_width, t.attention_bias, trainable);
    w.linear(layer + ".self_attn.k_proj", t.hidden_size, kv_width, t.attention_bias, trainable);
    w.linear(layer + ".self_attn.v_proj", t.hidden_size, kv_width, t.attention_bias, trainable);
    w.linear(layer + ".self_attn.o_proj", q_width, t.hidden_size, t.attention_bias, trainable);
    w.param(layer + ".self_attn.q_norm.weight", {t.head_dim}, trainable);
    w.param(layer + ".self_attn.k_norm.weight", {t.head_dim}, trainable);
    w.linear(layer + ".mlp.gate_proj", t.hidden_size, t.intermediate_size, false, trainable);
    w.linear(layer + ".mlp.up_proj", t.hidden_size, t.intermediate_size, false, trainable);
    w.linear(layer + ".mlp.down_proj", t.intermediate_size, t.hidden_size, false, trainable);
    w.param(layer + ".input_layernorm.weight", {t.hidden_size}, trainable);
    w.param(layer + ".post_attention_layernorm.weight", {t.hidden_size}, trainable);
    w.end_unit();
  }
  w.param(p + "norm.weight", {t.hidden_size}, tuned);
}

// One diffusers BasicTransformerBlock (a unit): AdaLN's projection (the DiT) or an affine norm1 and
// norm3 (vl_self_attention), attention whose keys and values come from `key_dim`-wide tokens, the
// 4x GELU feed-forward.
void write_groot_block(GrootLayoutWriter& w, const std::string& block, const TransformerStackConfig& stack,
                       int64_t key_dim, bool ada_norm, bool trainable) {
  const int64_t dim = stack.inner_dim();
  w.begin_unit(block, "BasicTransformerBlock");
  if (ada_norm)
    w.linear(block + ".norm1.linear", dim, 2 * dim, true, trainable);
  else
    w.layer_norm(block + ".norm1", dim, trainable);
  w.linear(block + ".attn1.to_q", dim, dim, true, trainable);
  w.linear(block + ".attn1.to_k", key_dim, dim, true, trainable);
  w.linear(block + ".attn1.to_v", key_dim, dim, true, trainable);
  w.linear(block + ".attn1.to_out.0", dim, dim, true, trainable);
  if (!ada_norm) w.layer_norm(block + ".norm3", dim, trainable);
  w.linear(block + ".ff.net.0.proj", dim, 4 * dim, true, trainable);
  w.linear(block + ".ff.net.2", 4 * dim, dim, true, trainable);
  w.end_unit();
}

// GR00TN17ActionHead in registration order: the AlternateVLDiT (even blocks cross-attend to the VL
// features), the per-embodiment encoders and decoder, vlln, vl_self_attention, position_embedding.
void write_groot_head(GrootLayoutWriter& w, const GrootHeadConfig& h, const GrootConfig& config) {
  const std::string& p = kGrootHead;
  const bool dit = config.tune_diffusion_model, projector = config.tune_projector, vlln = config.tune_vlln;
  const int64_t inner = h.dit.inner_dim();
  w.linear(p + "model.timestep_encoder.timestep_embedder.linear_1", 256, inner, true, dit);
  w.linear(p + "model.timestep_encoder.timestep_embedder.linear_2", inner, inner, true, dit);
  for (int64_t b = 0; b < h.dit.num_layers; ++b)
    write_groot_block(w, p + "model.transformer_blocks." + std::to_string(b), h.dit,
                      b % 2 == 1 ? inner : h.backbone_embedding_dim, true, dit);
  w.linear(p + "model.proj_out_1", inner, 2 * inner, true, dit);
  w.linear(p + "model.proj_out_2", inner, h.dit.output_dim, true, dit);
  const int64_t e = h.max_num_embodiments;
  w.category_linear(p + "state_encoder.layer1", e, h.max_state_dim * h.state_history_length, h.hidden_size, projector);
  w.category_linear(p + "state_encoder.layer2", e, h.hidden_size, h.input_embedding_dim, projector);
  w.category_linear(p + "action_encoder.W1", e, h.max_action_dim, h.input_embedding_dim, projector);
  w.category_linear(p + "action_encoder.W2", e, 2 * h.input_embedding_dim, h.input_embedding_dim, projector);
  w.category_linear(p + "action_encoder.W3", e, h.input_embedding_dim, h.input_embedding_dim, projector);
  w.category_linear(p + "action_decoder.layer1", e, h.hidden_size, h.hidden_size, projector);
  w.category_linear(p + "action_decoder.layer2", e, h.hidden_size, h.max_action_dim, projector);
  if (h.use_vlln) w.layer_norm(p + "vlln", h.backbone_embedding_dim, vlln);
  for (int64_t k = 0; k < h.vl_self_attention.num_layers; ++k)
    write_groot_block(w, p + "vl_self_attention.transformer_blocks." + std::to_string(k), h.vl_self_attention,
                      h.vl_self_attention.inner_dim(), false, vlln);
  if (h.add_pos_embed) w.param(p + "position_embedding.weight", {h.max_seq_len, h.input_embedding_dim}, projector);
}

}  // namespace

PlannedPolicy plan_groot_parameters(const GrootConfig& config, const GrootModelConfig& model) {
  PlannedPolicy planned;
  planned.type = "groot";
  GrootLayoutWriter writer(planned);
  write_groot_vision(writer, model.backbone.vision, config.tune_visual);
  const int64_t layers = model.select_layer;
  write_groot_language(writer, model.backbone.text, layers, config);
  write_groot_head(writer, model.head, config);
  planned.optimizer_preset = config.optimizer_preset();
  planned.scheduler_preset = config.scheduler_preset();
  return planned;
}

namespace {

// Depths of the probe models: the smallest a full-width GR00T keeps its structure at — three vision
// blocks and three text layers (the three DeepStack features enter text layers 0-2), one
// vl_self_attention block, one cycle of four DiT blocks (cross-attention to the text tokens, self,
// cross-attention to the image tokens, self) — and one more block or cycle in each stack.
struct GrootProbeDepths {
  int64_t vision = 3, text = 3, vl_self_attention = 1, dit = 4;
};
constexpr int64_t kDitCycle = 4;

// `geometry` at `depths`, with a vocabulary of 1024 (embedding rows change no activation) and the
// special token ids the example batch uses moved below it. What the forward keeps does not depend on
// the number of embodiments (the category-specific linears run the batch's embodiment's slice of their
// weights: the example batch's id 0), so without gradient checkpointing the probes hold one; the
// backward's peak does (index_select's backward writes a gradient of every embodiment's weights).
GrootGeometry probe_geometry(const GrootGeometry& geometry, const GrootProbeDepths& depths, bool one_embodiment) {
  GrootGeometry small = geometry;
  auto& vision = small.model.backbone.vision;
  vision.depth = depths.vision;
  vision.deepstack_visual_indexes.resize(std::min<std::size_t>(vision.deepstack_visual_indexes.size(), 3));
  for (std::size_t k = 0; k < vision.deepstack_visual_indexes.size(); ++k)
    vision.deepstack_visual_indexes[k] = static_cast<int64_t>(k);
  small.model.select_layer = depths.text;
  small.model.backbone.text.vocab_size = 1024;
  small.model.backbone.image_token_id = 1000;
  small.backbone_config["image_token_id"] = 1000;
  small.backbone_config["vision_start_token_id"] = 1001;
  small.backbone_config["vision_end_token_id"] = 1002;
  small.model.head.vl_self_attention.num_layers = depths.vl_self_attention;
  small.model.head.dit.num_layers = depths.dit;
  if (one_embodiment) small.model.head.max_num_embodiments = 1;
  return small;
}

// Why the extrapolation does not hold for this model, or empty.
std::string unmeasurable(const GrootConfig& config, const GrootModelConfig& model) {
  const GrootProbeDepths base;
  const int64_t text = model.select_layer;
  if (model.backbone.vision.depth < base.vision || text < base.text ||
      model.head.vl_self_attention.num_layers < base.vl_self_attention || model.head.dit.num_layers < base.dit ||
      model.head.dit.num_layers % kDitCycle != 0 || model.backbone.vision.deepstack_visual_indexes.size() > 3)
    return "the model's depths are below the probe models' (3 vision blocks, 3 text layers, 1 vl_self_attention "
           "block, DiT blocks in cycles of 4)";
  if (config.tune_top_llm_layers > base.text)
    return "tune_top_llm_layers > 3 trains text layers the probe models do not have";
  return "";
}

}  // namespace

PlannedPolicy plan_groot_policy(const GrootConfig& config, const GrootGeometry& geometry,
                                const GrootPolicyAtGeometry& build) {
  auto planned = plan_groot_parameters(config, geometry.model);
  const std::string why_not = unmeasurable(config, geometry.model);
  if (!why_not.empty()) {
    planned.activation_note = "not measured: " + why_not;
    return planned;
  }
  // One measure for every probe: with gradient checkpointing the backward's peak, which grows by each
  // layer's kept input per layer as the forward's kept bytes do without it.
  const auto what = activation_measure(config.gradient_checkpointing);
  auto measure = [&](const GrootProbeDepths& depths) {
    auto policy = build(probe_geometry(geometry, depths, !config.gradient_checkpointing));
    return measure_activations(*policy, {}, what).per_sample;
  };
  const GrootProbeDepths base_depths;
  const int64_t base = measure(base_depths);
  auto slope = [&](int64_t GrootProbeDepths::*stack, int64_t step) {
    GrootProbeDepths deeper = base_depths;
    deeper.*stack += step;
    return measure(deeper) - base;
  };
  const auto& model = geometry.model;
  const int64_t text = model.select_layer;
  const int64_t per_vision = slope(&GrootProbeDepths::vision, 1), per_text = slope(&GrootProbeDepths::text, 1);
  const int64_t per_vlsa = slope(&GrootProbeDepths::vl_self_attention, 1);
  const int64_t per_cycle = slope(&GrootProbeDepths::dit, kDitCycle);
  planned.activation_bytes_per_sample =
      base + (model.backbone.vision.depth - base_depths.vision) * per_vision + (text - base_depths.text) * per_text +
      (model.head.vl_self_attention.num_layers - base_depths.vl_self_attention) * per_vlsa +
      (model.head.dit.num_layers - base_depths.dit) / kDitCycle * per_cycle;
  planned.activations_under_autocast = config.use_bf16;  // GrootPolicy's own autocast, CPU included
  planned.activation_note =
      std::string("measured on CPU: training ") +
      (config.gradient_checkpointing ? "forwards and backwards (their peak, gradient checkpointing)" : "forwards") +
      " at batch 1 and 2 of full-width models with 3-4 vision blocks, 3-4 text layers, 1-2 vl_self_attention "
      "blocks and 4-8 DiT blocks, extrapolated to " +
      std::to_string(model.backbone.vision.depth) + ", " + std::to_string(text) + ", " +
      std::to_string(model.head.vl_self_attention.num_layers) + " and " + std::to_string(model.head.dit.num_layers);
  spdlog::debug(
      "groot plan: activations {} base + {} per vision block + {} per text layer + {} per vl_self_attention "
      "block + {} per 4 DiT blocks, bytes per sample",
      base, per_vision, per_text, per_vlsa, per_cycle);
  return planned;
}

std::optional<PlannedPolicy> plan_groot_without_building(const nlohmann::json& config, const PolicyFeatures& features,
                                                         const std::function<void(Policy&)>& adapt_probe) {
  auto parsed = GrootConfig::from_json(config, features);
  if (!parsed.geometry.empty()) return std::nullopt;  // lrhost's small geometries are built
  const auto geometry = resolve_geometry(parsed);
  check_padded_dims(parsed, geometry);  // the plan accepts no config that training refuses
  return plan_groot_policy(parsed, geometry, [&](const GrootGeometry& small) {
    auto probe = std::make_shared<GrootPolicy>(parsed, small);
    if (adapt_probe) adapt_probe(*probe);
    return probe;
  });
}

}  // namespace lrhost::policy::groot
