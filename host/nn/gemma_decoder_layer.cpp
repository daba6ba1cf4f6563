// Gemma decoder layer (PiGemma numerics), its two halves, and the shared attention step.
#include "host/nn/gemma_decoder_layer.hpp"

#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

namespace {
// lerobot/utils/constants.py OPENPI_ATTENTION_MASK_VALUE: finite, so bf16 + mask stays finite in fp32.
constexpr double kOpenpiMaskValue = -2.3819763e38;
}  // namespace

GemmaDecoderLayerImpl::GemmaDecoderLayerImpl(const GemmaConfig& config) {
  config.validate("GemmaDecoderLayer");
  const int64_t cond_dim = config.use_adarms ? config.adarms_cond_dim : 0;
  // Registration order = transformers' (self_attn, mlp, input_layernorm, post_attention_layernorm).
  self_attn = register_module("self_attn", LlamaAttention(config));
  mlp = register_module("mlp", LlamaMLP(config.hidden_size, config.intermediate_size, false, config.hidden_act));
  input_layernorm = register_module("input_layernorm", GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, cond_dim));
  post_attention_layernorm =
      register_module("post_attention_layernorm", GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, cond_dim));
}

GemmaLayerInput GemmaDecoderLayerImpl::begin(const torch::Tensor& x, const torch::Tensor& cond) {
  if (x.dim() != 3)
    throw util::DataError("GemmaDecoderLayer: input must be (batch, length, hidden), got " + c10::str(x.sizes()));
  auto normed = input_layernorm->forward_with_gate(x, cond);
  return {self_attn->project(normed.hidden), normed.gate};
}

torch::Tensor GemmaDecoderLayerImpl::finish(const torch::Tensor& x, const torch::Tensor& attended,
                                            const torch::Tensor& gate, const torch::Tensor& cond) {
  const auto o_dtype = self_attn->o_proj->weight.scalar_type();
  auto out = self_attn->project_output(attended.scalar_type() == o_dtype ? attended : attended.to(o_dtype));
  const auto after_attention = gated_residual(x, out, gate);
  auto normed = post_attention_layernorm->forward_with_gate(after_attention, cond);
  auto h = normed.hidden;
  // compute_layer_complete casts to bf16 when up_proj is bf16 (an fp32 stream into bf16 MLP weights).
  if (mlp->up_proj->weight.scalar_type() == torch::kBFloat16) h = h.to(torch::kBFloat16);
  return gated_residual(after_attention, mlp->forward(h), normed.gate);
}

torch::Tensor GemmaDecoderLayerImpl::forward(const torch::Tensor& x, const RotaryTables& rope,
                                             const torch::Tensor& mask, const torch::Tensor& cond) {
  auto input = begin(x, cond);
  auto attended = gemma_attend(input.qkv.query, input.qkv.key, input.qkv.value, rope, mask);
  return finish(x, attended, input.gate, cond);
}

torch::Tensor gemma_attend(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                           const RotaryTables& rope, const torch::Tensor& mask) {
  auto q = apply_rotary_pos_emb(query, rope);
  auto k = apply_rotary_pos_emb(key, rope);
  return attend(q, k, value, mask, {.kernel = AttentionKernel::eager});
}

torch::Tensor additive_attention_mask(const torch::Tensor& allowed) {
  if (allowed.scalar_type() != torch::kBool || (allowed.dim() != 3 && allowed.dim() != 4))
    throw util::DataError("additive_attention_mask: expected a boolean (B, Lq, Lk) or (B, 1, Lq, Lk) mask, got " +
                          std::string(c10::toString(allowed.scalar_type())) + " " + c10::str(allowed.sizes()));
  const auto m = allowed.dim() == 3 ? allowed.unsqueeze(1) : allowed;
  return torch::where(m, torch::scalar_tensor(0.0, torch::TensorOptions(torch::kFloat32).device(m.device())),
                      torch::scalar_tensor(kOpenpiMaskValue, torch::TensorOptions(torch::kFloat32).device(m.device())));
}

}  // namespace lrhost::nn
