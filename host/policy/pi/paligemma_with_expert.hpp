// pi0/pi05's two-stream transformer (LeRobot 0.6.1 PaliGemmaWithExpertModel, modeling_pi0.py; the same
// class serves pi05): the PaliGemma VLM (SigLIP tower, projector, Gemma language model) reads the
// prefix (images, language), the Gemma action expert the suffix (state and/or noisy actions). In every
// one of the layer pairs (VLM layer i, expert layer i) both streams' q/k/v are concatenated along the
// sequence and go through ONE eager attention under one mask (compute_layer_complete); each stream then
// runs its own o_proj and MLP. Inference fills a prefix KV cache (post-RoPE keys and values of every
// VLM layer) once, then runs only the expert over the suffix per denoising step.
//
// Module names are LeRobot's, so `paligemma_with_expert.*` keys load strictly: `paligemma` holds
// `lm_head` and `model` (in that order: LeRobot replaces `model` after transformers built both), and
// `gemma_expert` holds `lm_head` and `model` (a PiGemmaModel without embed_tokens). The two lm_heads are
// dead — never computed, in LeRobot too — and kept only so that a LeRobot file loads and saves whole.
// They and the last VLM layer's second half (which feeds only the unused prefix output) never receive
// a gradient; lrhost marks them frozen (LeRobot leaves them requires_grad, and AdamW skips them for
// having no gradient: no state, no weight decay — the same updates).
//
// FSDP units are the decoder layers of a pair, gathered together (the joint attention needs both): the
// pair's computation runs inside both layers' hooked_forward. SigLIP's encoder layers are units of
// their own (each runs inside its own hooks, host/nn/siglip_encoder.cpp). With gradient checkpointing, each
// pair is recomputed in backward (nn::checkpoint inside the pair's hooks, so FSDP's pre-backward
// gather happens before the recompute), and each SigLIP layer too while the tower trains.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "host/nn/gemma_model.hpp"
#include "host/nn/paligemma_model.hpp"
#include "host/policy/pi/pi_geometry.hpp"

namespace lrhost::policy::pi {

// PaliGemmaForConditionalGenerationWithPiGemma: `lm_head` (dead) and `model`.
class PaliGemmaForConditionalGenerationImpl : public torch::nn::Module {
 public:
  explicit PaliGemmaForConditionalGenerationImpl(const nn::PaliGemmaConfig& config);
  torch::nn::Linear lm_head{nullptr};
  nn::PaliGemmaModel model{nullptr};
};
TORCH_MODULE(PaliGemmaForConditionalGeneration);

// PiGemmaForCausalLM without token embeddings: `lm_head` (dead) and `model`.
class PiGemmaForCausalLMImpl : public torch::nn::Module {
 public:
  explicit PiGemmaForCausalLMImpl(const nn::GemmaConfig& config);
  torch::nn::Linear lm_head{nullptr};
  nn::GemmaModel model{nullptr};
};
TORCH_MODULE(PiGemmaForCausalLM);

// The FSDP gather group of a unit (policy_spec.hpp fsdp_gather_group): an expert layer goes with the
// VLM layer of the same index (the joint attention gathers both); any other unit is its own group.
std::string layer_pair_of(const std::string& unit_path);

// Post-RoPE keys and values of the prefix per VLM layer, (B, P, kv_heads, head_dim) each.
struct PiPrefixCache {
  std::vector<torch::Tensor> keys, values;
};

struct PaliGemmaWithExpertOptions {
  bool freeze_vision_encoder = false;
  bool train_expert_only = false;
  bool gradient_checkpointing = false;
  bool bfloat16 = false;  // LeRobot's dtype = "bfloat16" split (to_bfloat16_for_selected_params)
};

class PaliGemmaWithExpertImpl : public torch::nn::Module {
 public:
  PaliGemmaWithExpertImpl(const PiGeometry& geometry, const PaliGemmaWithExpertOptions& options);

  // (B, 3, H, W) in [-1, 1] -> (B, patches, VLM width): the tower and projector in fp32 (LeRobot keeps
  // them fp32 in both dtype modes), the result in the image's dtype.
  torch::Tensor embed_image(const torch::Tensor& image);
  // Token ids -> embeddings scaled by √width inside embed_tokens (no second scaling, as LeRobot).
  torch::Tensor embed_language_tokens(const torch::Tensor& tokens);

  // Training pass: prefix (B, P, VLM width) and suffix (B, S, expert width) through every layer pair
  // under `mask` (additive fp32, (B, 1, P+S, P+S)) at `positions` (B, P+S); cond (B, expert width)
  // for adaptive expert norms (pi05) or undefined. Returns the suffix after the expert's final norm.
  // (LeRobot also runs the last VLM layer's second half and final norm on the prefix and drops the
  // result; both are skipped: they feed nothing, so their parameters get no gradient either way.)
  torch::Tensor forward(const torch::Tensor& prefix, const torch::Tensor& suffix, const torch::Tensor& mask,
                        const torch::Tensor& positions, const torch::Tensor& cond);
  // Inference, step 1: the prefix through the VLM layers (mask (B, 1, P, P) additive), keeping each
  // layer's post-RoPE keys and values.
  PiPrefixCache fill_cache(const torch::Tensor& prefix, const torch::Tensor& mask, const torch::Tensor& positions);
  // Inference, each denoising step: the suffix through the expert, attending to the cached prefix and
  // to itself; mask (B, 1, S, P+S) additive, positions (B, S). Returns the normed suffix.
  torch::Tensor forward_suffix(const torch::Tensor& suffix, const torch::Tensor& mask, const torch::Tensor& positions,
                               const PiPrefixCache& cache, const torch::Tensor& cond);

  // Keeps frozen parts in eval mode whatever the policy's mode (LeRobot's train() override).
  void train(bool on = true) override;

  nn::PaliGemmaModel vlm() const { return paligemma->model; }
  nn::GemmaModel language_model() const { return paligemma->model->language_model; }
  nn::GemmaModel expert_model() const { return gemma_expert->model; }
  bool layers_bfloat16() const;

  PaliGemmaForConditionalGeneration paligemma{nullptr};
  PiGemmaForCausalLM gemma_expert{nullptr};

 private:
  // One layer pair of the training pass: {prefix out (undefined for the last pair), suffix out}.
  std::vector<torch::Tensor> run_pair(int64_t index, const torch::Tensor& prefix, const torch::Tensor& suffix,
                                      const torch::Tensor& cond, const torch::Tensor& mask,
                                      const torch::Tensor& positions);

  PaliGemmaWithExpertOptions options_;
};
TORCH_MODULE(PaliGemmaWithExpert);

}  // namespace lrhost::policy::pi
