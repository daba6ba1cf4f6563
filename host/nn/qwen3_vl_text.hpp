// Qwen3-VL's language model (transformers 5.5's Qwen3VLTextModel, modeling_qwen3_vl.py), the text
// half of GR00T N1.7's backbone:
//  - Qwen3VLTextConfig: the geometry of a config.json's `text_config` (model_type "qwen3_vl_text").
//  - Interleaved M-RoPE: position ids (3, B, L) — temporal, height, width rows — give per-row angles
//    inv_freq · pos in fp32; frequency j takes the H row when j % 3 == 1 and j < 3·section[1], the W
//    row when j % 3 == 2 and j < 3·section[2], else T; cos/sin of [freqs, freqs] cast to the
//    activation dtype, applied split-half (transformers' apply_rotary_pos_emb).
//  - Qwen3TextAttention: Llama-style q/k/v/o (GQA) with a per-head RMSNorm on q and k before RoPE
//    (q_norm, k_norm over head_dim), SDPA as transformers' "sdpa" backend calls it.
//  - Qwen3TextDecoderLayer: pre-RMSNorm attention and SwiGLU MLP with residuals (LlamaMLP, RMSNorm).
//  - Qwen3VLTextModel: embed_tokens, the layers, norm; DeepStack: visual features added to the hidden
//    states at the image positions after layers 0..k-1. `run_layers` stops after any layer and returns
//    its output before the final norm, which is what GR00T's head reads (its select_layer tap).
// Module names are transformers' (`model.language_model.` + these), so its weights load as they are.
#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/nn/attention_core.hpp"
#include "host/nn/llama_mlp.hpp"
#include "host/nn/rms_norm.hpp"
#include "host/nn/rotary_embedding.hpp"

namespace lrhost::nn {

struct Qwen3VLTextConfig {
  int64_t vocab_size = 151936;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 22016;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;
  int64_t head_dim = 128;
  double rms_norm_eps = 1e-6;
  double rope_theta = 5000000.0;
  std::vector<int64_t> mrope_section{24, 20, 20};
  bool attention_bias = false;

  // A Qwen3-VL `text_config` object (transformers' Qwen3VLTextConfig keys; others ignored). ConfigError
  // naming `where` and the key for what is missing, inconsistent or not built here (another rope
  // type, a non-interleaved M-RoPE, an activation other than silu).
  static Qwen3VLTextConfig from_json(const nlohmann::json& object, const std::string& where);
};

// The interleaved M-RoPE tables for position ids (3, B, L) (or (B, L): the same ids on all rows).
class Qwen3MropeRotary {
 public:
  explicit Qwen3MropeRotary(const Qwen3VLTextConfig& config);
  RotaryTables tables(const torch::Tensor& position_ids, c10::ScalarType dtype) const;

 private:
  LlamaRotaryEmbedding base_;  // the inverse frequencies (transformers' default rope parameters)
  std::vector<int64_t> section_;
};

class Qwen3TextAttentionImpl : public torch::nn::Module {
 public:
  explicit Qwen3TextAttentionImpl(const Qwen3VLTextConfig& config);
  // x (B, L, hidden); mask as for attend() (boolean, true = may attend), e.g. causal_padding_mask.
  torch::Tensor forward(const torch::Tensor& x, const RotaryTables& rope, const torch::Tensor& mask);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Qwen3TextAttention);

class Qwen3TextDecoderLayerImpl : public torch::nn::Module {
 public:
  explicit Qwen3TextDecoderLayerImpl(const Qwen3VLTextConfig& config);
  torch::Tensor forward(const torch::Tensor& x, const RotaryTables& rope, const torch::Tensor& mask);
  Qwen3TextAttention self_attn{nullptr};
  LlamaMLP mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(Qwen3TextDecoderLayer);

// transformers' create_causal_mask for SDPA with a padding mask: (B, 1, L, L) bool, key j visible to
// query i when j <= i and attention_mask[b, j].
torch::Tensor causal_padding_mask(const torch::Tensor& attention_mask);

class Qwen3VLTextModelImpl : public torch::nn::Module {
 public:
  // `layers`: how many decoder layers to build (GR00T keeps select_layer of them); -1 = all.
  explicit Qwen3VLTextModelImpl(const Qwen3VLTextConfig& config, int64_t layers = -1);
  // inputs_embeds (B, L, hidden); position_ids (3, B, L); attention_mask (B, L) (1 = token);
  // visual_pos_masks (B, L) bool and deepstack (one (N_visual, hidden) tensor per early layer) or
  // empty. Runs layers 0..last (all when last = -1) and returns the last one's output, before norm.
  torch::Tensor run_layers(const torch::Tensor& inputs_embeds, const torch::Tensor& position_ids,
                           const torch::Tensor& attention_mask, const torch::Tensor& visual_pos_masks,
                           const std::vector<torch::Tensor>& deepstack, int64_t last = -1);

  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers;
  RMSNorm norm{nullptr};
  // Activation checkpointing of each layer in a training forward (nn/activation_checkpoint.hpp).
  bool gradient_checkpointing = false;

 private:
  Qwen3VLTextConfig config_;
  Qwen3MropeRotary rotary_;
};
TORCH_MODULE(Qwen3VLTextModel);

}  // namespace lrhost::nn
