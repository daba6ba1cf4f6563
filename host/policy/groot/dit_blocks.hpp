// The transformer blocks of GR00T N1.7's action head, as diffusers 0.39 computes them under LeRobot's
// configuration (action_head/cross_attention_dit.py):
//  - DiffusersAttention: to_q / to_k / to_v / to_out.0 with biases, heads split, SDPA (scale
//    head_dim^-0.5) with an optional boolean key mask (B, S) (true = attend), dropout on the output
//    (AttnProcessor2_0). Keys come from the block's input (self) or the VL features (cross).
//  - BasicTransformerBlock: norm1 (AdaLayerNorm on the timestep embedding: LN without affine times
//    (1 + scale) plus shift, scale first; or an affine LayerNorm), attention, final dropout,
//    residual; norm3 (LayerNorm), FeedForward (Linear 4x, GELU tanh, dropout, Linear, dropout),
//    residual. Dropout p at all four sites, in training mode only.
//  - TimestepEncoder: diffusers Timesteps(256, flip_sin_to_cos, downscale_freq_shift = 1) then
//    TimestepEmbedding (Linear, SiLU, Linear).
//  - AlternateVLDiT: odd blocks self-attend over [state, actions]; even blocks cross-attend to the VL
//    tokens, blocks 0, 4, 8, ... to the non-image tokens and 2, 6, 10, ... to the image tokens (both
//    within the attention mask); output: LN(eps 1e-6, no affine) * (1 + scale) + shift with
//    shift first from proj_out_1(silu(temb)), then proj_out_2.
//  - SelfAttentionTransformer (vl_self_attention): affine-LayerNorm blocks, no mask at all (valid
//    tokens also attend to left padding, as in LeRobot).
#pragma once
#include <torch/torch.h>

#include <vector>

#include "host/policy/groot/groot_head_config.hpp"

namespace lrhost::policy::groot {

class DiffusersAttentionImpl : public torch::nn::Module {
 public:
  // cross_dim 0: self-attention (keys from the query's input).
  DiffusersAttentionImpl(int64_t dim, int64_t heads, int64_t head_dim, int64_t cross_dim, double dropout);
  // x (B, L, dim); context (B, S, cross_dim) or undefined; key_mask (B, S) bool or undefined.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context, const torch::Tensor& key_mask);
  torch::nn::Linear to_q{nullptr}, to_k{nullptr}, to_v{nullptr};
  torch::nn::ModuleList to_out;

 private:
  torch::nn::Linear out_proj_{nullptr};  // to_out[0]
  int64_t heads_, head_dim_;
  double dropout_;
};
TORCH_MODULE(DiffusersAttention);

// diffusers' GELU(approximate="tanh") with its projection, so that the key is "net.0.proj".
class GeluProjectionImpl : public torch::nn::Module {
 public:
  GeluProjectionImpl(int64_t in, int64_t out);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear proj{nullptr};
};
TORCH_MODULE(GeluProjection);

class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(int64_t dim, double dropout, bool final_dropout);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::ModuleList net;  // 0: GeluProjection, 1: dropout, 2: Linear (3: diffusers' final dropout)

 private:
  GeluProjection in_proj_{nullptr};      // net[0]
  torch::nn::Linear out_proj_{nullptr};  // net[2]
  double dropout_;
  bool final_dropout_;
};
TORCH_MODULE(FeedForward);

// diffusers' AdaLayerNorm as GR00T uses it: (scale, shift) = linear(silu(temb)).chunk(2) — scale
// first — then LN(x; eps 1e-5, no affine) * (1 + scale) + shift.
class AdaLayerNormImpl : public torch::nn::Module {
 public:
  explicit AdaLayerNormImpl(int64_t dim);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& temb);
  torch::nn::Linear linear{nullptr};

 private:
  int64_t dim_;
};
TORCH_MODULE(AdaLayerNorm);

class BasicTransformerBlockImpl : public torch::nn::Module {
 public:
  // ada_norm: norm1 is an AdaLayerNorm over the timestep embedding (the DiT), else an affine
  // LayerNorm (vl_self_attention); norm3 is affine exactly when norm1 is not adaptive.
  BasicTransformerBlockImpl(const TransformerStackConfig& stack, int64_t cross_dim, bool ada_norm);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context, const torch::Tensor& key_mask,
                        const torch::Tensor& temb);
  AdaLayerNorm ada_norm1{nullptr};      // "norm1" with ada_norm
  torch::nn::LayerNorm norm1{nullptr};  // "norm1" without
  torch::nn::LayerNorm norm3{nullptr};  // without ada_norm; the DiT's norm3 has no parameters
  DiffusersAttention attn1{nullptr};
  FeedForward ff{nullptr};

 private:
  bool ada_norm_;
  int64_t dim_;
  double dropout_;
  bool final_dropout_;
};
TORCH_MODULE(BasicTransformerBlock);

// diffusers' get_timestep_embedding(t, 256, flip_sin_to_cos=True, downscale_freq_shift=1): [cos, sin].
torch::Tensor dit_timestep_projection(const torch::Tensor& timesteps, int64_t channels = 256);

// diffusers' TimestepEmbedding (linear_1, SiLU, linear_2) under "timestep_embedder".
class TimestepEmbeddingImpl : public torch::nn::Module {
 public:
  TimestepEmbeddingImpl(int64_t in, int64_t dim);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear linear_1{nullptr}, linear_2{nullptr};
};
TORCH_MODULE(TimestepEmbedding);

class TimestepEncoderImpl : public torch::nn::Module {
 public:
  explicit TimestepEncoderImpl(int64_t dim);
  torch::Tensor forward(const torch::Tensor& timesteps);  // (B) buckets -> (B, dim)
  TimestepEmbedding timestep_embedder{nullptr};
};
TORCH_MODULE(TimestepEncoder);

class AlternateVLDiTImpl : public torch::nn::Module {
 public:
  AlternateVLDiTImpl(const TransformerStackConfig& stack, int64_t cross_dim, int64_t attend_text_every_n_blocks);
  // x (B, T, inner) the [state, actions] tokens; vl (B, S, cross_dim); timestep (B) buckets;
  // image_mask, attention_mask (B, S) bool. Returns (B, T, output_dim).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& vl, const torch::Tensor& timestep,
                        const torch::Tensor& image_mask, const torch::Tensor& attention_mask);
  TimestepEncoder timestep_encoder{nullptr};
  torch::nn::ModuleList transformer_blocks;
  torch::nn::Linear proj_out_1{nullptr}, proj_out_2{nullptr};
  // Activation checkpointing of each block in a training forward (nn/activation_checkpoint.hpp).
  bool gradient_checkpointing = false;

 private:
  int64_t inner_dim_, attend_text_every_n_blocks_;
};
TORCH_MODULE(AlternateVLDiT);

class SelfAttentionTransformerImpl : public torch::nn::Module {
 public:
  explicit SelfAttentionTransformerImpl(const TransformerStackConfig& stack);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::ModuleList transformer_blocks;
  bool gradient_checkpointing = false;  // as AlternateVLDiT's
};
TORCH_MODULE(SelfAttentionTransformer);

}  // namespace lrhost::policy::groot
