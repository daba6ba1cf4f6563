// SmolVLA's training FLOPs, in the order the training forward runs (flow_matching_model.cpp,
// smolvlm_with_expert.cpp): the vision tower and connector per camera, the state projection, the
// suffix embedding, the layer loop and the action head. Which backward products exist follows the
// data: a projection's weight gradient when its weight trains, its input's when the input requires a
// gradient, both only when the output reaches the loss. The prefix requires one from the start when
// anything in it trains (the state projection by default), and after the first joint self-attention
// in any case (its output mixes in the expert's values). A layer's prefix output reaches the loss only
// through a later layer with an expert layer: past the last such layer, the prefix's o_proj and MLP
// (and its own attention, where no expert reads it) get no backward.
#include "host/policy/smolvla/smolvla_flops.hpp"

#include <vector>

#include "host/policy/training_flops.hpp"
#include "host/policy/vision/siglip_flops.hpp"

namespace lrhost::policy::smolvla {
namespace {

bool trains(const torch::nn::Linear& linear) {
  return linear->weight.requires_grad();
}

struct Counter {
  TrainingFlops flops;
  bool recomputed = false;  // the current layer pair is checkpointed

  // x (rows, in) -> (rows, out); `input_grad`: x requires a gradient; `used`: the output reaches the loss.
  void linear(double rows, const torch::nn::Linear& layer, bool input_grad, bool used = true) {
    const auto& weight = layer->weight;
    flops.matmul(rows, static_cast<double>(weight.size(1)), static_cast<double>(weight.size(0)), used && trains(layer),
                 used && input_grad, recomputed);
  }
  // softmax(q·kᵀ)·v for `queries` rows over `keys`, `heads` of `head_dim`.
  void attention(double heads, double head_dim, double queries, double keys, bool needs_grad) {
    flops.activation_matmul(heads * queries, head_dim, keys, needs_grad, recomputed);
    flops.activation_matmul(heads * queries, keys, head_dim, needs_grad, recomputed);
  }
  // o_proj and the SwiGLU MLP of one stream.
  void finish(double rows, nn::LlamaDecoderLayerImpl& layer, bool input_grad, bool used) {
    linear(rows, layer.self_attn->o_proj, input_grad, used);
    const bool after_o = input_grad || trains(layer.self_attn->o_proj);
    linear(rows, layer.mlp->gate_proj, after_o, used);
    linear(rows, layer.mlp->up_proj, after_o, used);
    const bool after_gate = after_o || trains(layer.mlp->gate_proj) || trains(layer.mlp->up_proj);
    linear(rows, layer.mlp->down_proj, after_gate, used);
  }
};

// Whether a decoder layer's output requires a gradient given its input's.
bool output_grad(nn::LlamaDecoderLayerImpl& layer, bool input_grad) {
  for (const auto& p : layer.parameters())
    if (p.requires_grad()) return true;
  return input_grad;
}

}  // namespace

double smolvla_training_flops_per_sample(VLAFlowMatchingImpl& model, const SmolVLAConfig& config,
                                         const nn::SmolVLMConfig& vlm_config, int64_t num_cameras) {
  Counter c;
  auto& with_expert = *model.vlm_with_expert;
  auto vlm_model = with_expert.vlm_model();

  // The prefix: cameras through the tower and the connector, the language (an embedding lookup: no
  // FLOPs), the state token.
  const auto& connector = vlm_model->connector->modality_projection->proj;
  bool vision_trains = false;
  for (const auto& p : vlm_model->vision_model->parameters()) vision_trains = vision_trains || p.requires_grad();
  const int64_t scale = vlm_model->connector->scale_factor();
  double image_tokens = 0;
  for (int64_t camera = 0; camera < num_cameras; ++camera) {
    int64_t patches = 0;
    if (config.cache_vision_features) {
      const int64_t side = vlm_config.vision.image_size / vlm_config.vision.patch_size;
      patches = side * side;
    } else {
      patches = vision::count_siglip_flops(c.flops, vlm_config.vision, vision_trains,
                                           config.gradient_checkpointing && vision_trains);
    }
    const double tokens = static_cast<double>(patches / (scale * scale));
    c.linear(tokens, connector, vision_trains);
    image_tokens += tokens;
  }
  c.linear(1, model.state_proj, false);
  double prefix = image_tokens + static_cast<double>(config.tokenizer_max_length) + 1;
  if (config.prefix_length > prefix) prefix = static_cast<double>(config.prefix_length);
  bool prefix_grad = vision_trains || trains(connector) || trains(model.state_proj);
  for (const auto& p : vlm_model->text_model->parameters()) prefix_grad = prefix_grad || p.requires_grad();

  // The suffix: chunk_size action tokens fused with the time embedding.
  const double suffix = static_cast<double>(config.chunk_size);
  c.linear(suffix, model.action_in_proj, false);
  c.linear(suffix, model.action_time_mlp_in, trains(model.action_in_proj));
  c.linear(suffix, model.action_time_mlp_out, true);
  bool suffix_grad = true;  // the suffix embedding trains

  // Whether layer i's prefix output reaches the loss: some later layer has an expert layer, which reads
  // the prefix (its keys and values); a layer without one only hands the prefix on.
  const int64_t layers = with_expert.num_vlm_layers();
  std::vector<bool> prefix_needed(static_cast<std::size_t>(layers), false);
  for (int64_t i = layers - 2; i >= 0; --i)
    prefix_needed[static_cast<std::size_t>(i)] =
        prefix_needed[static_cast<std::size_t>(i + 1)] || static_cast<bool>(with_expert.expert_layer(i + 1));
  for (int64_t i = 0; i < layers; ++i) {
    auto& vlm_layer = *vlm_model->text_model->layer(static_cast<std::size_t>(i));
    auto expert_handle = with_expert.expert_layer(i);
    nn::LlamaDecoderLayerImpl* expert = expert_handle ? expert_handle.get() : nullptr;
    const bool needed = prefix_needed[static_cast<std::size_t>(i)];
    c.recomputed = with_expert.gradient_checkpointing();
    const auto& vlm_attn = *vlm_layer.self_attn;
    const double heads = static_cast<double>(vlm_config.text.num_attention_heads);
    const double head_dim = static_cast<double>(vlm_attn.head_dim());
    bool next_prefix_grad = prefix_grad;
    if (with_expert.is_self_attention_layer(i)) {
      // One attention over [prefix; suffix] (the prefix's rows alone without an expert layer).
      // Without an expert layer the attention serves the prefix output alone.
      const bool used = expert != nullptr || needed;
      for (const auto* projection : {&vlm_attn.q_proj, &vlm_attn.k_proj, &vlm_attn.v_proj})
        c.linear(prefix, *projection, prefix_grad, used);
      double rows = prefix;
      bool attention_grad =
          prefix_grad || trains(vlm_attn.q_proj) || trains(vlm_attn.k_proj) || trains(vlm_attn.v_proj);
      if (expert) {
        const auto& attn = *expert->self_attn;
        for (const auto* projection : {&attn.q_proj, &attn.k_proj, &attn.v_proj})
          c.linear(suffix, *projection, suffix_grad);
        rows += suffix;
        attention_grad = true;
      }
      c.attention(heads, head_dim, rows, rows, attention_grad && used);
      c.finish(prefix, vlm_layer, attention_grad, needed);
      if (expert) c.finish(suffix, *expert, true, true);
      next_prefix_grad = output_grad(vlm_layer, attention_grad);
    } else {
      // The prefix attends to itself; the expert re-projects the VLM layer's keys and values.
      const bool key_grad = prefix_grad || trains(vlm_attn.k_proj);
      const bool value_grad = prefix_grad || trains(vlm_attn.v_proj);
      c.linear(prefix, vlm_attn.q_proj, prefix_grad, needed);
      c.linear(prefix, vlm_attn.k_proj, prefix_grad, needed || expert != nullptr);
      c.linear(prefix, vlm_attn.v_proj, prefix_grad, needed || expert != nullptr);
      const bool prefix_attention_grad = prefix_grad || trains(vlm_attn.q_proj) || key_grad || value_grad;
      c.attention(heads, head_dim, prefix, prefix, prefix_attention_grad && needed);
      c.finish(prefix, vlm_layer, prefix_attention_grad, needed);
      if (expert) {
        const auto& attn = *expert->self_attn;
        c.linear(suffix, attn.q_proj, suffix_grad);
        c.linear(prefix, attn.k_proj, key_grad);
        c.linear(prefix, attn.v_proj, value_grad);
        c.attention(heads, head_dim, suffix, prefix, true);
        c.finish(suffix, *expert, true, true);
      }
      next_prefix_grad = output_grad(vlm_layer, prefix_attention_grad);
    }
    prefix_grad = next_prefix_grad;
    suffix_grad = true;
  }
  c.recomputed = false;
  c.linear(suffix, model.action_out_proj, true);
  return c.flops.total();
}

}  // namespace lrhost::policy::smolvla
