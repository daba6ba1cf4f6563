// Reading a state_dict that Python's torch.save wrote (a .pth file, e.g. torchvision's ImageNet
// weights in the torch hub cache), without running any Python: torch.save's zip format (since
// PyTorch 1.6) holds a pickle of the dict and the raw tensor storages; a restricted unpickler rebuilds
// the tensors from them, knowing only the few globals a state_dict's pickle names and calling nothing
// from the file. The pre-1.6 legacy (non-zip) format is refused with how to convert it.
#pragma once
#include <torch/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::io {

// The file's {name: tensor} entries in the dict's order (CPU tensors). Throws util::IoError
// (unreadable) or util::DataError (legacy format, not a zip, not a dict of tensors), naming the file.
std::vector<std::pair<std::string, torch::Tensor>> read_torch_state_dict(const std::filesystem::path& file);

}  // namespace lrhost::io
