// PaliGemmaWithExpertModel's state-dict layout from its configs; see paligemma_layout.hpp.
#include "host/nn/paligemma_layout.hpp"

namespace lrhost::nn {
namespace {

using Layout = std::vector<TensorLayout>;

void add(Layout& out, const std::string& key, std::vector<int64_t> shape) {
  out.push_back({key, std::move(shape)});
}

// A Gemma RMSNorm: weight [width] (used as 1 + w), or adaptive: dense [3·width, cond] + bias.
void add_gemma_norm(Layout& out, const std::string& prefix, const GemmaConfig& c) {
  if (c.use_adarms) {
    add(out, prefix + "dense.weight", {3 * c.hidden_size, c.adarms_cond_dim});
    add(out, prefix + "dense.bias", {3 * c.hidden_size});
  } else {
    add(out, prefix + "weight", {c.hidden_size});
  }
}

void add_gemma_model(Layout& out, const std::string& prefix, const GemmaConfig& c, bool with_embeddings) {
  const int64_t d = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  if (with_embeddings) add(out, prefix + "embed_tokens.weight", {c.vocab_size, d});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string layer = prefix + "layers." + std::to_string(i) + ".";
    add(out, layer + "self_attn.q_proj.weight", {q, d});
    add(out, layer + "self_attn.k_proj.weight", {kv, d});
    add(out, layer + "self_attn.v_proj.weight", {kv, d});
    add(out, layer + "self_attn.o_proj.weight", {d, q});
    add(out, layer + "mlp.gate_proj.weight", {c.intermediate_size, d});
    add(out, layer + "mlp.up_proj.weight", {c.intermediate_size, d});
    add(out, layer + "mlp.down_proj.weight", {d, c.intermediate_size});
    add_gemma_norm(out, layer + "input_layernorm.", c);
    add_gemma_norm(out, layer + "post_attention_layernorm.", c);
  }
  add_gemma_norm(out, prefix + "norm.", c);
}

void add_siglip_tower(Layout& out, const std::string& prefix, const SiglipVisionConfig& v) {
  const int64_t h = v.hidden_size, patches = (v.image_size / v.patch_size) * (v.image_size / v.patch_size);
  add(out, prefix + "embeddings.patch_embedding.weight", {h, v.num_channels, v.patch_size, v.patch_size});
  add(out, prefix + "embeddings.patch_embedding.bias", {h});
  add(out, prefix + "embeddings.position_embedding.weight", {patches, h});
  for (int64_t j = 0; j < v.num_hidden_layers; ++j) {
    const std::string layer = prefix + "encoder.layers." + std::to_string(j) + ".";
    for (const char* proj : {"k_proj", "v_proj", "q_proj", "out_proj"}) {
      add(out, layer + "self_attn." + proj + ".weight", {h, h});
      add(out, layer + "self_attn." + proj + ".bias", {h});
    }
    for (const char* norm : {"layer_norm1", "layer_norm2"}) {
      add(out, layer + norm + ".weight", {h});
      add(out, layer + norm + ".bias", {h});
    }
    add(out, layer + "mlp.fc1.weight", {v.intermediate_size, h});
    add(out, layer + "mlp.fc1.bias", {v.intermediate_size});
    add(out, layer + "mlp.fc2.weight", {h, v.intermediate_size});
    add(out, layer + "mlp.fc2.bias", {h});
  }
  add(out, prefix + "post_layernorm.weight", {h});
  add(out, prefix + "post_layernorm.bias", {h});
}

}  // namespace

std::vector<TensorLayout> paligemma_with_expert_layout(const PaliGemmaConfig& vlm, const GemmaConfig& expert) {
  Layout out;
  add_siglip_tower(out, "paligemma.model.vision_tower.vision_model.", vlm.vision);
  add(out, "paligemma.model.multi_modal_projector.linear.weight", {vlm.projection_dim, vlm.vision.hidden_size});
  add(out, "paligemma.model.multi_modal_projector.linear.bias", {vlm.projection_dim});
  add_gemma_model(out, "paligemma.model.language_model.", vlm.text, /*with_embeddings=*/true);
  add(out, "paligemma.lm_head.weight", {vlm.text.vocab_size, vlm.text.hidden_size});
  add_gemma_model(out, "gemma_expert.model.", expert, /*with_embeddings=*/false);
  add(out, "gemma_expert.lm_head.weight", {expert.vocab_size, expert.hidden_size});
  return out;
}

int64_t layout_numel(const std::vector<TensorLayout>& layout) {
  int64_t total = 0;
  for (const auto& entry : layout) {
    int64_t n = 1;
    for (auto d : entry.shape) n *= d;
    total += n;
  }
  return total;
}

}  // namespace lrhost::nn
