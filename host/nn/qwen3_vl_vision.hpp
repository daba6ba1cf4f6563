// Qwen3-VL's vision tower (transformers 5.5's Qwen3VLVisionModel, modeling_qwen3_vl.py), the image
// half of GR00T N1.7's backbone. Input: the processor's flattened patches (N, C·Tp·P·P), merge-block
// major (the 2x2 patches of each merge block adjacent), and image_grid_thw (images, 3).
//  - patch_embed: Conv3d with kernel = stride = (Tp, P, P) over each patch.
//  - pos_embed: a learned √n x √n grid bilinearly interpolated onto each image's h x w patch grid
//    (linspace over the grid, floor/ceil indices and four weights, fast_pos_embed_interpolate),
//    reordered merge-block major.
//  - 2-D rotary: per patch [row angles, column angles] from inv_freq of head_dim / 2, duplicated to
//    head_dim; applied to q and k in fp32 (apply_rotary_pos_emb_vision).
//  - blocks: pre-LN (eps 1e-6) attention (qkv, SDPA per image: images never attend to each other,
//    proj) and MLP (fc1, GELU tanh, fc2).
//  - merger: LN per patch, 2x2 patches concatenated, fc1, GELU (erf), fc2 to the LM width; the
//    DeepStack mergers after the listed blocks concatenate first and normalise the concatenation.
// Module names are transformers' (`model.visual.` + these).
#pragma once
#include <torch/torch.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/nn/rotary_embedding.hpp"

namespace lrhost::nn {

struct Qwen3VLVisionConfig {
  int64_t depth = 27;
  int64_t hidden_size = 1152;
  int64_t intermediate_size = 4304;
  int64_t num_heads = 16;
  int64_t in_channels = 3;
  int64_t patch_size = 16;
  int64_t temporal_patch_size = 2;
  int64_t spatial_merge_size = 2;
  int64_t out_hidden_size = 3584;
  int64_t num_position_embeddings = 2304;
  std::vector<int64_t> deepstack_visual_indexes{8, 16, 24};

  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t patch_values() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
  // A Qwen3-VL `vision_config` object. ConfigError naming `where` and the key.
  static Qwen3VLVisionConfig from_json(const nlohmann::json& object, const std::string& where);
};

// What the tower gives the language model: one token per merge block, and the DeepStack features.
struct Qwen3VisionOutput {
  torch::Tensor merged;                  // (N / merge², out_hidden_size)
  std::vector<torch::Tensor> deepstack;  // one (N / merge², out_hidden_size) per deepstack index
};

class Qwen3VisionAttentionImpl : public torch::nn::Module {
 public:
  explicit Qwen3VisionAttentionImpl(const Qwen3VLVisionConfig& config);
  // x (N, hidden); cos/sin (N, head_dim) fp32; lengths: patches per image (their sum is N).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const std::vector<int64_t>& lengths);
  torch::nn::Linear qkv{nullptr}, proj{nullptr};

 private:
  int64_t heads_, head_dim_;
};
TORCH_MODULE(Qwen3VisionAttention);

class Qwen3VisionMLPImpl : public torch::nn::Module {
 public:
  explicit Qwen3VisionMLPImpl(const Qwen3VLVisionConfig& config);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear linear_fc1{nullptr}, linear_fc2{nullptr};
};
TORCH_MODULE(Qwen3VisionMLP);

class Qwen3VisionBlockImpl : public torch::nn::Module {
 public:
  explicit Qwen3VisionBlockImpl(const Qwen3VLVisionConfig& config);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const std::vector<int64_t>& lengths);
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  Qwen3VisionAttention attn{nullptr};
  Qwen3VisionMLP mlp{nullptr};
};
TORCH_MODULE(Qwen3VisionBlock);

class Qwen3PatchMergerImpl : public torch::nn::Module {
 public:
  // postshuffle_norm: normalise the concatenated 2x2 group (DeepStack) instead of each patch.
  Qwen3PatchMergerImpl(const Qwen3VLVisionConfig& config, bool postshuffle_norm);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear linear_fc1{nullptr}, linear_fc2{nullptr};

 private:
  int64_t merged_width_;
  bool postshuffle_norm_;
};
TORCH_MODULE(Qwen3PatchMerger);

class Qwen3VLVisionModelImpl : public torch::nn::Module {
 public:
  explicit Qwen3VLVisionModelImpl(const Qwen3VLVisionConfig& config);
  // pixel_values (N, patch_values); grid_thw (images, 3) integer, each t·h·w patches.
  Qwen3VisionOutput forward(const torch::Tensor& pixel_values, const torch::Tensor& grid_thw);

  std::shared_ptr<torch::nn::Module> patch_embed;  // holds "proj"
  torch::nn::Conv3d patch_proj{nullptr};           // patch_embed.proj
  torch::nn::Embedding pos_embed{nullptr};
  torch::nn::ModuleList blocks;
  Qwen3PatchMerger merger{nullptr};
  torch::nn::ModuleList deepstack_merger_list;
  // Activation checkpointing of each block in a training forward (nn/activation_checkpoint.hpp).
  bool gradient_checkpointing = false;

 private:
  torch::Tensor interpolated_positions(const std::vector<std::array<int64_t, 3>>& grids) const;
  torch::Tensor rotary_angles(const std::vector<std::array<int64_t, 3>>& grids) const;  // (N, head_dim / 2)
  Qwen3VLVisionConfig config_;
  LlamaRotaryEmbedding rotary_;  // inverse frequencies of head_dim / 2, base 10000
};
TORCH_MODULE(Qwen3VLVisionModel);

}  // namespace lrhost::nn
