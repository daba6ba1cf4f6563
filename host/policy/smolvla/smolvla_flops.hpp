// SmolVLA's training FLOPs per sample (training_flops.hpp's count), read off the built model: every
// projection's shape and whether its weight trains come from the modules themselves, so freezing
// (freeze_vision_encoder, train_expert_only, train_state_proj, the last VLM layers LeRobot freezes) and
// the layer pairing are the model's own. What SmolVLAPolicy::training_flops_per_sample returns.
#pragma once
#include <cstdint>

#include "host/nn/smolvlm_config.hpp"
#include "host/policy/smolvla/flow_matching_model.hpp"
#include "host/policy/smolvla/smolvla_config.hpp"

namespace lrhost::policy::smolvla {

// `num_cameras`: the images every sample feeds the vision tower (the config's cameras and its empty
// ones). The language is counted at tokenizer_max_length: exact with pad_language_to = "max_length",
// an upper bound with "longest". With the vision feature cache the tower's FLOPs are left out (a
// cached frame skips it; the first pass over the data still runs it).
double smolvla_training_flops_per_sample(VLAFlowMatchingImpl& model, const SmolVLAConfig& config,
                                         const nn::SmolVLMConfig& vlm_config, int64_t num_cameras);

}  // namespace lrhost::policy::smolvla
