// VLAFlowMatching (LeRobot 0.6.1 modeling_smolvla.py), the module under the policy's `model` name:
// SmolVLA's prefix (camera tokens, language tokens, one state token) and suffix (noisy actions fused
// with a sinusoidal time embedding) embeddings, its velocity head, and the flow-matching training
// loss and Euler sampling over a prefix KV cache built from the shared VLA parts in
// host/policy/common (flow_matching.hpp, prefix_suffix_masks.hpp). Inputs are already prepared by
// the policy: images in [-1, 1] at the resize size, state and actions zero-padded to max_state_dim /
// max_action_dim.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "host/policy/smolvla/smolvla_config.hpp"
#include "host/policy/smolvla/smolvlm_with_expert.hpp"

namespace lrhost::policy::smolvla {

struct PrefixInputs {
  std::vector<torch::Tensor> images;  // per camera (B, 3, H, W) in [-1, 1]
  // Per camera, when defined: the vision tower + connector output (B, tokens, width) already computed
  // (the vision feature cache); images[c] is then not embedded again.
  std::vector<torch::Tensor> image_features;
  std::vector<torch::Tensor> image_masks;  // per camera (B,) bool
  torch::Tensor language_tokens;           // (B, L) int64
  torch::Tensor language_masks;            // (B, L) bool
  torch::Tensor state;                     // (B, max_state_dim)
};

struct Prefix {
  torch::Tensor embeddings;  // (B, P, VLM width)
  torch::Tensor pad_masks;   // (B, P) bool
  torch::Tensor att_masks;   // (B, P) int64: 0 for image and language tokens, 1 for the state token
};

class VLAFlowMatchingImpl : public torch::nn::Module {
 public:
  VLAFlowMatchingImpl(const SmolVLAConfig& config, const nn::SmolVLMConfig& vlm_config);

  Prefix embed_prefix(const PrefixInputs& inputs);
  // Per-element flow-matching losses (B, chunk, max_action_dim), unreduced (LeRobot's forward).
  torch::Tensor forward(const PrefixInputs& inputs, const torch::Tensor& actions, const torch::Tensor& noise,
                        const torch::Tensor& time);
  // The denoised chunk (B, chunk, max_action_dim) from `noise` (B, chunk, max_action_dim).
  torch::Tensor sample_actions(const PrefixInputs& inputs, const torch::Tensor& noise);

  // LeRobot's samplers, in its RNG order: noise from the device generator, then the time from the
  // CPU generator (Beta(1.5, 1) · 0.999 + 0.001); see common/flow_matching.hpp.
  static torch::Tensor sample_noise(at::IntArrayRef shape, const torch::Device& device);
  static torch::Tensor sample_time(int64_t batch, const torch::Device& device);

  SmolVLMWithExpert vlm_with_expert{nullptr};
  torch::nn::Linear state_proj{nullptr}, action_in_proj{nullptr}, action_out_proj{nullptr};
  torch::nn::Linear action_time_mlp_in{nullptr}, action_time_mlp_out{nullptr};

 private:
  struct Suffix {
    torch::Tensor embeddings, pad_masks, att_masks;
  };
  Suffix embed_suffix(const torch::Tensor& noisy_actions, const torch::Tensor& time);
  torch::Tensor velocity(const torch::Tensor& suffix_out);

  SmolVLAConfig config_;
};
TORCH_MODULE(VLAFlowMatching);

}  // namespace lrhost::policy::smolvla
