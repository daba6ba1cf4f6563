// Pretrained backbone weights (policy/vision/backbone_weights.hpp, io/torch_state_dict.hpp): the torch
// hub directory rule, torchvision's weight names resolved in it, the errors for a missing file, an
// unknown name, a legacy or corrupt .pth or one naming other globals, and a torch.save zip file
// loaded into the ResNet-18 trunk.
// (tests/lua/backbone_weights.sh checks a file that Python's torch.save wrote against the trained
// checkpoint.)
#include <doctest/doctest.h>
#include <torch/serialize.h>

#include "host/io/torch_state_dict.hpp"
#include "host/policy/vision/backbone_weights.hpp"
#include "host/policy/vision/resnet18.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost::policy::vision;
using lrhost::test::ScopedEnv;
namespace fs = std::filesystem;

namespace {

// A torchvision-named resnet18 state_dict (with fc) as torch.save's zip format, written by LibTorch.
std::vector<std::pair<std::string, torch::Tensor>> write_resnet18_pth(const fs::path& file) {
  torch::manual_seed(3);
  ResNet18 source(ResNet18Options{NormKind::BatchNorm, false});
  c10::Dict<std::string, torch::Tensor> dict;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : source->named_parameters()) tensors.emplace_back(item.key(), item.value().detach().clone());
  for (const auto& item : source->named_buffers())
    tensors.emplace_back(
        item.key(), item.value().is_floating_point() ? torch::rand_like(item.value()) + 0.5 : item.value().clone());
  tensors.emplace_back("fc.weight", torch::randn({1000, 512}));
  for (const auto& [key, tensor] : tensors) dict.insert(key, tensor);
  auto bytes = torch::pickle_save(dict);
  lrhost::test::write_text(file, std::string(bytes.begin(), bytes.end()));
  return tensors;
}

}  // namespace

TEST_CASE("the torch hub directory follows torch.hub.get_dir: TORCH_HOME, then XDG_CACHE_HOME, then ~/.cache") {
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv torch_home("TORCH_HOME", "/t"), xdg("XDG_CACHE_HOME", "/x");
    CHECK(torch_hub_dir() == fs::path("/t/hub"));
  }
  {
    ScopedEnv torch_home("TORCH_HOME", "~/th"), xdg("XDG_CACHE_HOME", std::nullopt);
    CHECK(torch_hub_dir() == fs::path("/home/u/th/hub"));
  }
  {
    ScopedEnv torch_home("TORCH_HOME", std::nullopt), xdg("XDG_CACHE_HOME", "/x");
    CHECK(torch_hub_dir() == fs::path("/x/torch/hub"));
  }
  ScopedEnv torch_home("TORCH_HOME", std::nullopt), xdg("XDG_CACHE_HOME", std::nullopt);
  CHECK(torch_hub_dir() == fs::path("/home/u/.cache/torch/hub"));
}

TEST_CASE("torchvision weight names resolve in the hub cache; a missing file says where and how to get it") {
  lrhost::test::TempDir dir("hub");
  ScopedEnv torch_home("TORCH_HOME", dir.path.string());
  const auto expected = dir / "hub/checkpoints/resnet18-f37072fd.pth";
  try {
    resolve_backbone_weights("ResNet18_Weights.IMAGENET1K_V1");
    FAIL("a missing hub file was accepted");
  } catch (const lrhost::util::IoError& error) {
    const std::string message = std::string(error.what()) + " " + error.hint();
    CHECK(message.find(expected.string()) != std::string::npos);
    CHECK(message.find("torchvision.models.resnet18(weights='IMAGENET1K_V1')") != std::string::npos);
    CHECK(message.find("policy.pretrained_backbone_weights=null") != std::string::npos);
    CHECK(message.find("$TORCH_HOME/hub") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(resolve_backbone_weights("ResNet34_Weights.IMAGENET1K_V1"),
                       doctest::Contains("not a torchvision weight lrhost knows"), lrhost::util::ConfigError);
  CHECK_THROWS_WITH_AS(resolve_backbone_weights((dir / "nowhere.safetensors").string()), doctest::Contains("no file"),
                       lrhost::util::IoError);

  fs::create_directories(expected.parent_path());
  write_resnet18_pth(expected);
  for (const char* name : {"ResNet18_Weights.IMAGENET1K_V1", "ResNet18_Weights.DEFAULT", "IMAGENET1K_V1"})
    CHECK(resolve_backbone_weights(name) == expected);
  CHECK(resolve_backbone_weights(expected.string()) == expected);  // a path is a path
}

TEST_CASE("a torch.save zip .pth loads into the trunk, named or numbered") {
  lrhost::test::TempDir dir("pth");
  const auto file = dir / "resnet18.pth";
  const auto tensors = write_resnet18_pth(file);
  auto read = lrhost::io::read_torch_state_dict(file);
  REQUIRE(read.size() == tensors.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    CHECK(read[i].first == tensors[i].first);  // the dict's order
    CHECK(torch::equal(read[i].second, tensors[i].second));
  }
  for (bool numbered : {false, true}) {
    ResNet18 target(ResNet18Options{NormKind::BatchNorm, numbered});
    target->load_torchvision_weights(file.string());
    auto state = target->named_parameters();
    CHECK(torch::equal(state[numbered ? "0.weight" : "conv1.weight"], tensors.front().second));
    CHECK(torch::equal(target->named_buffers()[numbered ? "7.1.bn2.running_var" : "layer4.1.bn2.running_var"],
                       read[tensors.size() - 3].second));  // the last buffer before num_batches_tracked, fc
  }
}

TEST_CASE("a legacy, corrupt or foreign backbone file is a clear error naming it") {
  lrhost::test::TempDir dir("pth_bad");
  lrhost::test::write_text(dir / "legacy.pth",
                           std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 14));
  CHECK_THROWS_WITH_AS(lrhost::io::read_torch_state_dict(dir / "legacy.pth"),
                       doctest::Contains("legacy (pre-PyTorch-1.6, non-zip) format"), lrhost::util::DataError);
  try {
    lrhost::io::read_torch_state_dict(dir / "legacy.pth");
  } catch (const lrhost::util::DataError& error) {
    CHECK(std::string(error.hint()).find("torch.save(torch.load(") != std::string::npos);  // how to convert
  }
  lrhost::test::write_text(dir / "corrupt.pth", std::string("PK\x03\x04 not really a zip archive", 30));
  CHECK_THROWS_WITH_AS(lrhost::io::read_torch_state_dict(dir / "corrupt.pth"),
                       doctest::Contains("corrupt.pth: unreadable torch.save archive"), lrhost::util::DataError);
  lrhost::test::write_text(dir / "text.pth", "hello");
  CHECK_THROWS_WITH_AS(lrhost::io::read_torch_state_dict(dir / "text.pth"), doctest::Contains("not a torch.save file"),
                       lrhost::util::DataError);
  auto list = torch::pickle_save(c10::List<int64_t>({1, 2}));
  lrhost::test::write_text(dir / "list.pth", std::string(list.begin(), list.end()));
  // What a state_dict's pickle does not hold (here a list, and the global that types it) is refused.
  CHECK_THROWS_WITH_AS(lrhost::io::read_torch_state_dict(dir / "list.pth"),
                       doctest::Contains("list.pth: data.pkl at byte"), lrhost::util::DataError);
  auto number = torch::pickle_save(torch::IValue(int64_t{7}));
  lrhost::test::write_text(dir / "number.pth", std::string(number.begin(), number.end()));
  CHECK_THROWS_WITH_AS(lrhost::io::read_torch_state_dict(dir / "number.pth"),
                       doctest::Contains("expected a state_dict"), lrhost::util::DataError);
  lrhost::test::write_text(dir / "weights.bin", "x");
  ResNet18 trunk;
  CHECK_THROWS_WITH_AS(trunk->load_torchvision_weights((dir / "weights.bin").string()),
                       doctest::Contains("neither .safetensors nor .pth"), lrhost::util::ConfigError);
}
