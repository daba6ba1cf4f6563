// Where a policy's `pretrained_backbone_weights` value points: a local .safetensors or .pth file
// holding a torchvision resnet18 state_dict, or torchvision's weight enum name as LeRobot gives it
// (ResNet18_Weights.IMAGENET1K_V1, LeRobot ACT's default), looked up in the local torch hub cache
// where torchvision downloads it (torch.hub.get_dir()/checkpoints). lrhost never downloads: a
// missing file is an error saying where to put it and how to get it.
#pragma once
#include <torch/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::policy::vision {

// torch.hub.get_dir()'s rule: $TORCH_HOME/hub, else $XDG_CACHE_HOME/torch/hub, else ~/.cache/torch/hub.
std::filesystem::path torch_hub_dir();

// The file a value names: an enum name resolved in torch_hub_dir()/checkpoints (it must exist), or
// the value as a path. Throws util::ConfigError for an enum name lrhost does not know and
// util::IoError for a missing file, with the fix.
std::filesystem::path resolve_backbone_weights(const std::string& value);

// The state_dict in `file`, by extension: .safetensors, or .pth/.pt (torch.save's zip format).
std::vector<std::pair<std::string, torch::Tensor>> read_backbone_state_dict(const std::filesystem::path& file);

}  // namespace lrhost::policy::vision
