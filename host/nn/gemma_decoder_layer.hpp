// A Gemma decoder layer as LeRobot's PiGemma runs it (lerobot/policies/pi_gemma.py over transformers
// 5.5's GemmaAttention/GemmaMLP): pre-norm multi-query attention and GeGLU-tanh MLP, Gemma RMSNorms
// (1 + w), or adaptive ones with gated residuals when the config says use_adarms. Module names are
// transformers' (self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj, input_layernorm,
// post_attention_layernorm), so `…layers.{i}.` keys load as they are.
//
// Attention numerics are transformers' eager path, which pi0/pi05 force: scores q·kᵀ·head_dim^-0.5 in
// the query dtype (no upcast), an additive fp32 mask added (bf16 scores promote to fp32), softmax in
// fp32 cast back to the query dtype, then ·v.
//
// Besides forward(), the layer exposes the two halves around the attention core, because pi0/pi05
// (compute_layer_complete, modeling_pi0.py) run the halves of two layers (VLM and action expert)
// around ONE attention over both streams' concatenated q/k/v:
//   begin():  norm (+ gate) and q/k/v projections of one stream (before RoPE);
//   gemma_attend(): RoPE and eager attention over the concatenated streams;
//   finish(): o_proj of the stream's slice, gated residual, post-norm, MLP, gated residual, with
//             LeRobot's casts (attention output to o_proj's dtype, normed input to up_proj's dtype).
#pragma once
#include <torch/torch.h>

#include "host/nn/gemma_config.hpp"
#include "host/nn/gemma_rms_norm.hpp"
#include "host/nn/llama_attention.hpp"
#include "host/nn/llama_mlp.hpp"
#include "host/nn/rotary_embedding.hpp"

namespace lrhost::nn {

struct GemmaLayerInput {
  QueryKeyValue qkv;   // (B, L, heads, head_dim) and twice (B, L, kv_heads, head_dim), pre-RoPE
  torch::Tensor gate;  // adaptive norm's residual gate, undefined otherwise
};

class GemmaDecoderLayerImpl : public torch::nn::Module {
 public:
  explicit GemmaDecoderLayerImpl(const GemmaConfig& config);

  // x (B, L, hidden); rope from LlamaRotaryEmbedding::tables(position_ids, x's dtype); mask boolean
  // (true = may attend) or additive, (B or 1, [1,] L, L); cond (B, adarms_cond_dim) when adaptive.
  torch::Tensor forward(const torch::Tensor& x, const RotaryTables& rope, const torch::Tensor& mask = {},
                        const torch::Tensor& cond = {});

  GemmaLayerInput begin(const torch::Tensor& x, const torch::Tensor& cond = {});
  // attended: this stream's rows of the attention output, (B, L, heads·head_dim).
  torch::Tensor finish(const torch::Tensor& x, const torch::Tensor& attended, const torch::Tensor& gate,
                       const torch::Tensor& cond = {});

  LlamaAttention self_attn{nullptr};
  LlamaMLP mlp{nullptr};
  GemmaRMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(GemmaDecoderLayer);

// RoPE on query and key (transformers' arithmetic: cos/sin in the tables' dtype, rotation in the
// activation dtype) and transformers' eager attention, scale head_dim^-0.5. query (B, T, H, D), key
// and value (B, T, Hkv, D); returns (B, T, H·D) in the query dtype.
torch::Tensor gemma_attend(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                           const RotaryTables& rope, const torch::Tensor& mask);

// pi0's additive mask from a boolean one (true = may attend): 0 where allowed, −2.3819763e38
// (OPENPI_ATTENTION_MASK_VALUE) elsewhere, fp32, with a head axis: (B, 1, Lq, Lk). A fully masked
// row then gets a uniform softmax, as in LeRobot.
torch::Tensor additive_attention_mask(const torch::Tensor& allowed);

}  // namespace lrhost::nn
