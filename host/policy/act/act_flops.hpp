// ACT's training FLOPs per sample (training_flops.hpp's count), from its config: what
// ACTPolicy::training_flops_per_sample returns for the step line's tflops and mfu.
#pragma once
#include "host/policy/act/act_config.hpp"

namespace lrhost::policy::act {

double act_training_flops_per_sample(const ACTConfig& config);

}  // namespace lrhost::policy::act
