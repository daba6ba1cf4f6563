// The EMA of the weights in a training checkpoint (optim/weight_ema.hpp; LeRobot main's layout,
// reference ema.md §3, with safetensors + JSON in place of its pickle):
//   pretrained_model_ema/           a complete policy folder holding the EMA weights, which LeRobot
//                                   loads as an ordinary policy (for LoRA: an adapter folder)
//   training_state/ema_state.json   the EMA's step, last decay and settings
//   training_state/ema_shadow.safetensors   the shadows by parameter name (fp32; without FSDP),
//                                   or, under FSDP, "ema/<name>" rows in the shard files
//                                   (sharded_state.hpp), re-sliced at another rank count.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "host/dist/fsdp/fsdp_engine.hpp"
#include "host/optim/weight_ema.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::ckpt {

inline constexpr const char* kPretrainedEmaDir = "pretrained_model_ema";

// Whether the EMA tracks the policy tensor `name`, as a filter for an FSDP gather.
dist::fsdp::StateFilter tracked_by(const optim::WeightEma& ema);

// pretrained_model_ema's weights: `live` (the policy's state dict, or under FSDP the gathered one)
// with each tensor `ema_values` names replaced by that value in the live tensor's dtype; for an
// adapted policy, the adapter file's tensors of it (adapter_folder.hpp).
std::vector<std::pair<std::string, torch::Tensor>> ema_policy_state(
    const policy::Policy& policy, std::vector<std::pair<std::string, torch::Tensor>> live,
    const std::map<std::string, torch::Tensor>& ema_values);

// Restores the shadows from training_state/ema_shadow.safetensors (a checkpoint written without
// FSDP); with `fsdp`, each shadow becomes this rank's shard of the saved full tensor.
void load_ema_shadow_file(const std::filesystem::path& state_dir, optim::WeightEma& ema,
                          const dist::fsdp::FsdpEngine* fsdp);

}  // namespace lrhost::ckpt
