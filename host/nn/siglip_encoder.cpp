// SigLIP MLP, pre-LN encoder layer and layer stack (see siglip_encoder.hpp).
#include "host/nn/siglip_encoder.hpp"

#include <memory>
#include <vector>

#include "host/nn/activation_checkpoint.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/nn/forward_hooks.hpp"
#include "host/nn/linear.hpp"

namespace lrhost::nn {

// FSDP may wrap the encoder layers (pi0/pi05): each runs inside its own hooked_forward.
[[maybe_unused]] const bool kSiglipEncoderLayerHookable = register_hookable_module_type("SiglipEncoderLayer");

SiglipMLPImpl::SiglipMLPImpl(const SiglipVisionConfig& config)
    : gelu_approximate_(config.hidden_act == "gelu" ? "none" : "tanh") {
  fc1 = register_module("fc1", torch::nn::Linear(config.hidden_size, config.intermediate_size));
  fc2 = register_module("fc2", torch::nn::Linear(config.intermediate_size, config.hidden_size));
}

torch::Tensor SiglipMLPImpl::forward(const torch::Tensor& x) {
  auto hidden = apply_linear(fc1, x);
  // In place when no graph is recorded (gelu's backward needs its input): one 4x-wide buffer less.
  hidden =
      torch::GradMode::is_enabled() ? torch::gelu(hidden, gelu_approximate_) : torch::gelu_(hidden, gelu_approximate_);
  return apply_linear(fc2, hidden);
}

SiglipEncoderLayerImpl::SiglipEncoderLayerImpl(const SiglipVisionConfig& config) {
  const auto norm = torch::nn::LayerNormOptions({config.hidden_size}).eps(config.layer_norm_eps);
  self_attn = register_module("self_attn", SiglipAttention(config));
  layer_norm1 = register_module("layer_norm1", torch::nn::LayerNorm(norm));
  mlp = register_module("mlp", SiglipMLP(config));
  layer_norm2 = register_module("layer_norm2", torch::nn::LayerNorm(norm));
}

torch::Tensor SiglipEncoderLayerImpl::forward(const torch::Tensor& hidden_states) {
  // residual + block, added into the block's fresh output (a Linear's, whose backward does not need
  // it): the same sum as transformers' `residual + hidden_states`, one buffer less.
  auto x = self_attn->forward(layer_norm1->forward(hidden_states)).add_(hidden_states);
  return mlp->forward(layer_norm2->forward(x)).add_(x);
}

SiglipEncoderImpl::SiglipEncoderImpl(const SiglipVisionConfig& config) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    SiglipEncoderLayer layer(config);
    release_parameters(*layer);  // deferred_init.hpp: one block at a time
    layers->push_back(layer);
  }
}

torch::Tensor SiglipEncoderImpl::forward(torch::Tensor hidden_states) {
  const bool checkpointed = gradient_checkpointing && torch::GradMode::is_enabled();
  for (const auto& module : *layers) {
    auto layer = std::dynamic_pointer_cast<SiglipEncoderLayerImpl>(module);
    auto run = [&]() -> torch::Tensor {
      if (!checkpointed) return layer->forward(hidden_states);
      // The layer holder is captured by value: the recompute runs in backward, after this loop.
      auto body = [layer](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{layer->forward(in[0])};
      };
      return checkpoint(body, {hidden_states}, trainable_parameters({layer.get()}))[0];
    };
    // Between the layer's hooks (forward_hooks.hpp), checkpoint included: FSDP gathers a layer that
    // is a unit (pi0/pi05) before its step and keeps it gathered for the recompute in backward.
    hidden_states = hooked_forward(*layer, {hidden_states}, run);
  }
  return hidden_states;
}

}  // namespace lrhost::nn
