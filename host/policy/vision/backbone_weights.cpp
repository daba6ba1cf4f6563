// Resolving and reading pretrained backbone weights (see the header).
#include "host/policy/vision/backbone_weights.hpp"

#include <cstdlib>
#include <regex>

#include "host/io/safetensors.hpp"
#include "host/io/torch_state_dict.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::vision {
namespace {

namespace fs = std::filesystem;

// torchvision's file for each ResNet18_Weights member (torchvision/models/resnet.py: the url's
// basename is the name torch.hub.load_state_dict_from_url keeps in the cache). DEFAULT = IMAGENET1K_V1.
struct KnownWeights {
  const char* member;
  const char* file;
};
constexpr KnownWeights kResNet18Weights[] = {{"IMAGENET1K_V1", "resnet18-f37072fd.pth"},
                                             {"DEFAULT", "resnet18-f37072fd.pth"}};

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// torchvision's WeightsEnum.verify accepts "ResNet18_Weights.IMAGENET1K_V1" and the bare member
// name; a value with a path separator or a file extension is a path.
bool is_enum_name(const std::string& value) {
  return std::regex_match(value, std::regex(R"(([A-Za-z0-9_]+_Weights\.)?[A-Z][A-Z0-9_]*)"));
}

}  // namespace

fs::path torch_hub_dir() {
  // os.path.expanduser applies to TORCH_HOME and to the XDG fallback alike.
  auto expand = [](std::string path) {
    if (path.starts_with("~")) path = env("HOME") + path.substr(1);
    return fs::path(path);
  };
  if (auto torch_home = env("TORCH_HOME"); !torch_home.empty()) return expand(torch_home) / "hub";
  if (auto xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return expand(xdg) / "torch" / "hub";
  return expand("~/.cache") / "torch" / "hub";
}

fs::path resolve_backbone_weights(const std::string& value) {
  if (!is_enum_name(value) || fs::is_regular_file(value)) {
    if (!fs::exists(value))
      throw util::IoError("pretrained_backbone_weights: no file '" + value + "'",
                          "give a torchvision resnet18 state_dict as .safetensors or .pth, a torchvision weight "
                          "name (ResNet18_Weights.IMAGENET1K_V1), or null for a random backbone");
    return value;
  }
  const std::string prefix = "ResNet18_Weights.";
  const std::string member = value.starts_with(prefix) ? value.substr(prefix.size()) : value;
  const char* file = nullptr;
  for (const auto& known : kResNet18Weights)
    if (member == known.member && (value == member || value.starts_with(prefix))) file = known.file;
  if (file == nullptr)
    throw util::ConfigError("pretrained_backbone_weights: '" + value + "' is not a torchvision weight lrhost knows",
                            "lrhost's backbone is resnet18: use ResNet18_Weights.IMAGENET1K_V1 (or DEFAULT), a local "
                            ".safetensors/.pth file, or null for a random backbone");
  const fs::path path = torch_hub_dir() / "checkpoints" / file;
  if (!fs::exists(path))
    throw util::IoError(
        "pretrained_backbone_weights: '" + value +
            "' names torchvision's ImageNet weights, which lrhost reads from "
            "the torch hub cache and never downloads; there is no '" +
            path.string() + "'",
        "put torchvision's " + std::string(file) +
            " there (searched as torch.hub.get_dir() does: $TORCH_HOME/hub, "
            "else $XDG_CACHE_HOME/torch/hub, else ~/.cache/torch/hub, then checkpoints/): on a machine with network, "
            "python -c \"import torchvision; torchvision.models.resnet18(weights='IMAGENET1K_V1')\" downloads it into "
            "that machine's cache; or give a local .safetensors/.pth file, or "
            "policy.pretrained_backbone_weights=null to train from a random backbone");
  return path;
}

std::vector<std::pair<std::string, torch::Tensor>> read_backbone_state_dict(const fs::path& file) {
  const auto extension = file.extension().string();
  if (extension == ".safetensors") return io::read_safetensors(file).tensors;
  if (extension == ".pth" || extension == ".pt") return io::read_torch_state_dict(file);
  throw util::ConfigError("pretrained_backbone_weights: '" + file.string() +
                              "' is neither .safetensors nor .pth (a torchvision resnet18 state_dict)",
                          "rename or convert it; or use null for a random backbone");
}

}  // namespace lrhost::policy::vision
