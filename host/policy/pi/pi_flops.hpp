// pi0/pi05's training FLOPs per sample, from geometry and config (training_flops.hpp's counting):
// what PiPolicy::training_flops_per_sample returns, for the step line's tflops and mfu.
#pragma once
#include <cstdint>

#include "host/policy/pi/pi_config_fields.hpp"
#include "host/policy/pi/pi_flow_matching.hpp"
#include "host/policy/pi/pi_geometry.hpp"
#include "host/policy/training_flops.hpp"

namespace lrhost::policy::pi {

// `num_cameras`: the images every sample feeds SigLIP (the config's cameras; missing ones are fed as
// empty images). Language is padded to tokenizer_max_length (pi's tokenizer step pads to it).
double pi_training_flops_per_sample(PiVariant variant, const PiConfigFields& config, const PiGeometry& geometry,
                                    int64_t num_cameras);

}  // namespace lrhost::policy::pi
