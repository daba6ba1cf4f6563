// PI0Pytorch / PI05Pytorch (LeRobot 0.6.1 modeling_pi0.py, modeling_pi05.py), the module under the
// policy's `model` name: prefix (every camera's 256-per-image SigLIP tokens, empty cameras included and
// masked, then the language tokens; one bidirectional block) and suffix embeddings, the velocity head,
// the flow-matching loss and Euler sampling over the prefix KV cache. The two variants differ only in
// the suffix:
//  - pi0: [state_proj(state) ; action_time_mlp_out(silu(action_time_mlp_in([action_in_proj(x_t) ;
//    sinusoid(t)])))], blocks [state | actions];
//  - pi05: action_in_proj(x_t) alone, one block; silu(time_mlp_out(silu(time_mlp_in(sinusoid(t))))) is
//    the condition of the expert's adaptive norms. (The state reaches pi05 through the prompt.)
// Inputs are prepared by the policy: images in [-1, 1] at image_resolution, state and actions
// zero-padded to max_state_dim / max_action_dim.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "host/policy/pi/paligemma_with_expert.hpp"
#include "host/policy/pi/pi_config_fields.hpp"

namespace lrhost::policy::pi {

enum class PiVariant { pi0, pi05 };

struct PiInputs {
  std::vector<torch::Tensor> images;       // per camera (B, 3, H, W) in [-1, 1]
  std::vector<torch::Tensor> image_masks;  // per camera (B,) bool
  torch::Tensor language_tokens;           // (B, L) int64
  torch::Tensor language_masks;            // (B, L) bool
  torch::Tensor state;                     // (B, max_state_dim); pi0 only
};

class PiFlowMatchingImpl : public torch::nn::Module {
 public:
  PiFlowMatchingImpl(PiVariant variant, const PiConfigFields& config, const PiGeometry& geometry);

  // Per-element flow-matching losses (B, chunk, max_action_dim), unreduced (LeRobot's forward).
  torch::Tensor forward(const PiInputs& inputs, const torch::Tensor& actions, const torch::Tensor& noise,
                        const torch::Tensor& time);
  // The denoised chunk (B, chunk, max_action_dim) from `noise`, in num_inference_steps Euler steps.
  torch::Tensor sample_actions(const PiInputs& inputs, const torch::Tensor& noise);

  PaliGemmaWithExpert paligemma_with_expert{nullptr};
  torch::nn::Linear action_in_proj{nullptr}, action_out_proj{nullptr};
  torch::nn::Linear state_proj{nullptr}, action_time_mlp_in{nullptr}, action_time_mlp_out{nullptr};  // pi0
  torch::nn::Linear time_mlp_in{nullptr}, time_mlp_out{nullptr};                                     // pi05

 private:
  struct Prefix {
    torch::Tensor embeddings, pad_masks, att_masks;
  };
  struct Suffix {
    torch::Tensor embeddings, pad_masks, att_masks, cond;
  };
  Prefix embed_prefix(const PiInputs& inputs);
  Suffix embed_suffix(const torch::Tensor& state, const torch::Tensor& noisy_actions, const torch::Tensor& time);
  torch::Tensor velocity(const torch::Tensor& suffix_out);

  PiVariant variant_;
  int64_t chunk_size_, num_inference_steps_;
  double min_period_, max_period_;
};
TORCH_MODULE(PiFlowMatching);

}  // namespace lrhost::policy::pi
