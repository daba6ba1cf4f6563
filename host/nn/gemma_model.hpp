// LeRobot's PiGemmaModel (lerobot/policies/pi_gemma.py: transformers' GemmaModel with PiGemma layers
// and norm) without a KV cache: embed_tokens (optional: pi0's action expert has none), layers.{i},
// norm, and the default rotary embedding shared by the layers. This is the module tree under
// `…paligemma.model.language_model.` and `…gemma_expert.model.`.
//
// Precision follows LeRobot's bf16 mode through to_lerobot_bfloat16(): linears and embeddings bf16,
// norms (and adaptive norms' dense) fp32, and the rotary inverse frequencies rounded through bf16 —
// `model.to(bfloat16)` rounds that non-persistent buffer, which moves RoPE angles at large positions
// (about 1.4 rad at position 1000 for one frequency) and must be replicated, not fixed.
#pragma once
#include <torch/torch.h>

#include "host/nn/gemma_config.hpp"
#include "host/nn/gemma_decoder_layer.hpp"
#include "host/nn/gemma_embedding.hpp"
#include "host/nn/gemma_rms_norm.hpp"
#include "host/nn/rotary_embedding.hpp"

namespace lrhost::nn {

class GemmaModelImpl : public torch::nn::Module {
 public:
  explicit GemmaModelImpl(const GemmaConfig& config, bool with_embeddings = true);

  // ids (B, L) -> (B, L, hidden) scaled by √hidden in the weight dtype; throws without embeddings.
  torch::Tensor embed(const torch::Tensor& input_ids);
  // PiGemmaModel.forward on inputs_embeds: cast to bf16 when the layers are bf16, RoPE tables in that
  // dtype, every layer, then the final norm (whose adaptive gate is dropped, as LeRobot does).
  // mask: boolean or additive (additive_attention_mask() for pi0's numerics); cond (B, adarms_cond_dim)
  // when the config uses adaRMS.
  torch::Tensor forward(const torch::Tensor& inputs_embeds, const torch::Tensor& position_ids,
                        const torch::Tensor& mask = {}, const torch::Tensor& cond = {});

  // cos/sin for position_ids (B, L), cast to `dtype` (the activation dtype).
  RotaryTables rope_tables(const torch::Tensor& position_ids, c10::ScalarType dtype) const;

  // LeRobot's to_bfloat16_for_selected_params on this model: everything bf16 except the norms, and
  // the rotary inverse frequencies rounded through bf16.
  void to_lerobot_bfloat16();

  GemmaDecoderLayer layer(std::size_t index) const { return layers->ptr<GemmaDecoderLayerImpl>(index); }
  const GemmaConfig& config() const { return config_; }
  const LlamaRotaryEmbedding& rotary_emb() const { return rotary_emb_; }
  LlamaRotaryEmbedding& rotary_emb() { return rotary_emb_; }

  GemmaScaledEmbedding embed_tokens{nullptr};  // null when built without embeddings
  torch::nn::ModuleList layers{nullptr};
  GemmaRMSNorm norm{nullptr};

 private:
  GemmaConfig config_;
  LlamaRotaryEmbedding rotary_emb_;
};
TORCH_MODULE(GemmaModel);

}  // namespace lrhost::nn
