// SmolVLA's two-stream transformer (LeRobot 0.6.1 smolvlm_with_expert.py SmolVLMWithExpertModel): the
// SmolVLM (vision tower, connector, the first num_vlm_layers text layers, unused lm_head) and the
// action expert (a narrower Llama stack without embeddings) run layer by layer side by side:
//  - self-attention layers (and every layer while the prefix KV cache is filled): both streams'
//    q/k/v are concatenated along the sequence and attend jointly under one 2-D mask;
//  - cross-attention layers (odd layers by default): the VLM prefix attends to itself, the expert's
//    queries attend to the VLM layer's post-RoPE keys and values, re-projected by the expert's own
//    k_proj/v_proj (kv_heads·head_dim -> kv_heads·head_dim), at positions re-based to 0.
// SmolVLA does not use the Llama layers' forward: it calls their projections, norms and MLP itself,
// with its own RoPE (base 10,000, fp32), its own eager attention (fp32 scores, finfo.min fill) and an
// in-place residual in the o_proj output dtype. All of that is replicated here, step for step.
#pragma once
#include <torch/torch.h>

#include <array>
#include <optional>
#include <vector>

#include "host/nn/llama_decoder_layer.hpp"
#include "host/nn/rms_norm.hpp"
#include "host/nn/smolvlm_model.hpp"
#include "host/policy/smolvla/smolvla_config.hpp"

namespace lrhost::policy::smolvla {

// The expert: transformers' LlamaModel built from the text config with embed_tokens removed.
class ExpertModelImpl : public torch::nn::Module {
 public:
  // cross_layer(i) says which layers read the VLM's keys/values (k_proj/v_proj of width kv_width).
  ExpertModelImpl(const nn::LlamaConfig& config, int64_t num_layers, const std::vector<bool>& cross_layer,
                  int64_t kv_width);
  nn::LlamaDecoderLayer layer(std::size_t index) const { return layers->ptr<nn::LlamaDecoderLayerImpl>(index); }

  torch::nn::ModuleList layers{nullptr};
  nn::RMSNorm norm{nullptr};
};
TORCH_MODULE(ExpertModel);

// Post-RoPE keys and values of the prefix per VLM layer, (B, P, kv_heads, head_dim) each.
struct PrefixCache {
  std::vector<torch::Tensor> keys, values;
};

class SmolVLMWithExpertImpl : public torch::nn::Module {
 public:
  SmolVLMWithExpertImpl(const SmolVLAConfig& config, const nn::SmolVLMConfig& vlm_config);

  // (B, 3, H, W) in [-1, 1] -> (B, image tokens, VLM width), in the vision tower's dtype.
  torch::Tensor embed_image(const torch::Tensor& image);
  torch::Tensor embed_language_tokens(const torch::Tensor& tokens);

  // Training pass (use_cache=False): prefix (B, P, VLM width) and suffix (B, S, expert width) through
  // every layer under `mask` (B, P+S, P+S) at `positions` (B, P+S); returns the suffix after the
  // expert's final norm. (LeRobot also norms the prefix and drops the result; that is skipped.)
  torch::Tensor forward(const torch::Tensor& prefix, const torch::Tensor& suffix, const torch::Tensor& mask,
                        const torch::Tensor& positions);
  // Inference, step 1: the prefix alone through every layer as self-attention, keeping each layer's
  // post-RoPE keys and values.
  PrefixCache fill_cache(const torch::Tensor& prefix, const torch::Tensor& mask, const torch::Tensor& positions);
  // Inference, each denoising step: the suffix attends to the cached prefix (and, in self-attention
  // layers, to itself); mask (B, S, P+S), positions (B, S). Returns the normed suffix.
  torch::Tensor forward_suffix(const torch::Tensor& suffix, const torch::Tensor& mask, const torch::Tensor& positions,
                               const PrefixCache& cache);

  // LeRobot's set_requires_grad: the frozen parts per freeze_vision_encoder / train_expert_only.
  void apply_freezing();
  // Keeps frozen parts in eval mode whatever the policy's mode (LeRobot's train() override).
  void train(bool on = true) override;

  int64_t expert_hidden_size() const { return expert_hidden_size_; }
  int64_t vlm_hidden_size() const { return vlm_hidden_size_; }
  int64_t num_vlm_layers() const { return num_vlm_layers_; }
  nn::SmolVLMModel vlm_model() const { return vlm->model; }
  // The expert layer paired with VLM layer i, or null (fewer expert layers than VLM layers): expert
  // layer j runs with VLM layer j · expert_stride().
  nn::LlamaDecoderLayer expert_layer(int64_t i) const;
  int64_t expert_stride() const { return num_vlm_layers_ / num_expert_layers_; }
  // Whether layer i runs as one joint self-attention over both streams (else the expert cross-attends).
  bool is_self_attention_layer(int64_t i) const;
  bool gradient_checkpointing() const { return gradient_checkpointing_; }

  nn::SmolVLMForConditionalGeneration vlm{nullptr};
  ExpertModel lm_expert{nullptr};

 private:
  enum class Pass { train, fill_cache, suffix };
  // (VLM layer i, its expert layer or null) and (prefix, suffix) with absent streams undefined
  // (LeRobot's None entries).
  using LayerPair = std::array<nn::LlamaDecoderLayer, 2>;
  using Streams = std::array<torch::Tensor, 2>;
  struct LayerContext {
    int64_t index;
    const torch::Tensor& mask;
    const torch::Tensor& positions;
    Pass pass;
    PrefixCache* cache;
  };
  // The shared layer loop.
  std::pair<torch::Tensor, torch::Tensor> run_layers(torch::Tensor prefix, torch::Tensor suffix,
                                                     const torch::Tensor& mask, const torch::Tensor& positions,
                                                     Pass pass, PrefixCache* cache);
  // The attention outputs of one layer: one joint output (self-attention) or one per stream (cross).
  std::vector<torch::Tensor> joint_attention(LayerPair& layers, const Streams& inputs, const LayerContext& at);
  std::vector<torch::Tensor> cross_attention(LayerPair& layers, const Streams& inputs, const LayerContext& at);
  std::vector<torch::Tensor> finish_layer(LayerPair& layers, const Streams& inputs,
                                          const std::vector<torch::Tensor>& att_outputs);
  torch::Tensor attention(const torch::Tensor& mask, const torch::Tensor& query, const torch::Tensor& key,
                          const torch::Tensor& value) const;

  // One layer index of the training pass (both streams through layer i): the body of the layer loop.
  std::vector<torch::Tensor> run_layer(int64_t i, const Streams& inputs, const LayerContext& at);

  bool freeze_vision_encoder_, train_expert_only_, cross_attention_, gradient_checkpointing_;
  int64_t self_attn_every_n_layers_, num_vlm_layers_, num_expert_layers_;
  int64_t expert_hidden_size_, vlm_hidden_size_;
};
TORCH_MODULE(SmolVLMWithExpert);

// LeRobot's get_intermediate_size: round_up(4 · int(2·hidden/3), 256).
int64_t expert_intermediate_size(int64_t hidden);

}  // namespace lrhost::policy::smolvla
