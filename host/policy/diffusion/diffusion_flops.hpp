// Diffusion Policy's training FLOPs per sample (training_flops.hpp's count), from its config and the
// built model's image encoders: what DiffusionPolicy::training_flops_per_sample returns.
#pragma once
#include "host/policy/diffusion/diffusion_config.hpp"
#include "host/policy/diffusion/diffusion_model.hpp"

namespace lrhost::policy::diffusion {

double diffusion_training_flops_per_sample(const DiffusionConfig& config, const DiffusionModelImpl& model);

}  // namespace lrhost::policy::diffusion
