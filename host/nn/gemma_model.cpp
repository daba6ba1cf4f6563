// PiGemma text model: embeddings, decoder layers, final norm, rotary embedding, LeRobot's bf16 split.
#include "host/nn/gemma_model.hpp"

#include "host/nn/deferred_init.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

GemmaModelImpl::GemmaModelImpl(const GemmaConfig& config, bool with_embeddings)
    : config_(config), rotary_emb_(config.head_dim, config.rope_theta) {
  config_.validate("GemmaModel");
  // Registration order = transformers' GemmaModel (embed_tokens, layers, norm).
  if (with_embeddings)
    embed_tokens = register_module("embed_tokens",
                                   GemmaScaledEmbedding(config.vocab_size, config.hidden_size, config.pad_token_id));
  layers = register_module("layers", torch::nn::ModuleList());
  if (embed_tokens) release_parameters(*embed_tokens);  // deferred_init.hpp: one block at a time
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    GemmaDecoderLayer layer(config);
    release_parameters(*layer);
    layers->push_back(layer);
  }
  norm = register_module(
      "norm", GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, config.use_adarms ? config.adarms_cond_dim : 0));
}

torch::Tensor GemmaModelImpl::embed(const torch::Tensor& input_ids) {
  if (!embed_tokens) throw util::DataError("GemmaModel: this model was built without token embeddings");
  return embed_tokens->forward(input_ids);
}

RotaryTables GemmaModelImpl::rope_tables(const torch::Tensor& position_ids, c10::ScalarType dtype) const {
  return rotary_emb_.tables(position_ids, dtype);
}

torch::Tensor GemmaModelImpl::forward(const torch::Tensor& inputs_embeds, const torch::Tensor& position_ids,
                                      const torch::Tensor& mask, const torch::Tensor& cond) {
  if (inputs_embeds.dim() != 3 || inputs_embeds.size(-1) != config_.hidden_size)
    throw util::DataError("GemmaModel: inputs_embeds must be (batch, length, " + std::to_string(config_.hidden_size) +
                          "), got " + c10::str(inputs_embeds.sizes()));
  auto h = inputs_embeds;
  if (layers->size() > 0 && layer(0)->self_attn->q_proj->weight.scalar_type() == torch::kBFloat16)
    h = h.to(torch::kBFloat16);
  const auto rope = rope_tables(position_ids, h.scalar_type());
  for (std::size_t i = 0; i < layers->size(); ++i) h = layer(i)->forward(h, rope, mask, cond);
  return norm->forward_with_gate(h, cond).hidden;
}

void GemmaModelImpl::to_lerobot_bfloat16() {
  // to_bfloat16_for_selected_params keeps parameters whose names contain input_layernorm,
  // post_attention_layernorm or model.norm in fp32; here those are the GemmaRMSNorm modules.
  convert_to(*this, torch::kBFloat16);
  for (const auto& child : modules(/*include_self=*/false))
    if (dynamic_cast<GemmaRMSNormImpl*>(child.get())) convert_to(*child, torch::kFloat32);
  rotary_emb_.round_inv_freq_through(torch::kBFloat16);
}

}  // namespace lrhost::nn
