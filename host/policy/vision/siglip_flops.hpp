// A SigLIP vision tower (patch embedding, encoder layers) in training_flops.hpp's count, for the VLAs
// that embed their cameras with one (pi0/pi05's PaliGemma, SmolVLA's SmolVLM).
#pragma once
#include <cstdint>

#include "host/nn/siglip_config.hpp"
#include "host/policy/training_flops.hpp"

namespace lrhost::policy::vision {

// Adds one image at the tower's image_size to `flops`; `trains`: the tower's weights train (the
// pixels never need a gradient), `checkpointed`: its layers are recomputed in backward. Returns the
// number of patches (the tower's output tokens).
int64_t count_siglip_flops(TrainingFlops& flops, const nn::SiglipVisionConfig& vision, bool trains, bool checkpointed);

}  // namespace lrhost::policy::vision
