// ResNet-18 trunk: torchvision's key names and sizes for each norm kind and naming scheme, the
// feature-map shape, and loading torchvision weights from safetensors (name mapping and errors).
#include <doctest/doctest.h>

#include "host/io/safetensors.hpp"
#include "host/policy/vision/resnet18.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost::policy::vision;

namespace {
std::map<std::string, std::vector<int64_t>> shapes_of(torch::nn::Module& module) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& item : module.named_parameters()) shapes[item.key()] = item.value().sizes().vec();
  for (const auto& item : module.named_buffers()) shapes[item.key()] = item.value().sizes().vec();
  return shapes;
}

// torchvision resnet18's state_dict without fc, built from the architecture description: 20 convs,
// 20 norms (each with `norm_keys`), in named or numbered form.
std::map<std::string, std::vector<int64_t>> expected_keys(const std::vector<std::string>& norm_keys, bool numbered) {
  std::map<std::string, std::vector<int64_t>> keys;
  auto add_norm = [&](const std::string& prefix, int64_t c) {
    for (const auto& k : norm_keys)
      keys[prefix + "." + k] = k == "num_batches_tracked" ? std::vector<int64_t>{} : std::vector<int64_t>{c};
  };
  keys[numbered ? "0.weight" : "conv1.weight"] = {64, 3, 7, 7};
  add_norm(numbered ? "1" : "bn1", 64);
  const int64_t widths[] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    std::string name = numbered ? std::to_string(layer + 4) : "layer" + std::to_string(layer + 1);
    int64_t c = widths[layer], in = layer == 0 ? 64 : widths[layer - 1];
    for (int block = 0; block < 2; ++block) {
      std::string p = name + "." + std::to_string(block);
      keys[p + ".conv1.weight"] = {c, block == 0 ? in : c, 3, 3};
      keys[p + ".conv2.weight"] = {c, c, 3, 3};
      add_norm(p + ".bn1", c);
      add_norm(p + ".bn2", c);
      if (block == 0 && layer > 0) {
        keys[p + ".downsample.0.weight"] = {c, in, 1, 1};
        add_norm(p + ".downsample.1", c);
      }
    }
  }
  return keys;
}
}  // namespace

TEST_CASE("resnet18 trunk has torchvision's keys for every norm kind and naming") {
  ResNet18 frozen(ResNet18Options{NormKind::FrozenBatchNorm, false});
  CHECK((shapes_of(*frozen) == expected_keys({"weight", "bias", "running_mean", "running_var"}, false)));
  CHECK(frozen->parameters().size() == 20);  // only the convolutions train
  int64_t params = 0;
  for (const auto& p : frozen->parameters()) params += p.numel();
  CHECK(params == 11176512 - 2 * 4800);  // torchvision trunk minus the norms' weight and bias (4800 channels)

  ResNet18 batch_norm(ResNet18Options{NormKind::BatchNorm, true});
  auto bn_keys = shapes_of(*batch_norm);
  CHECK(bn_keys.size() == 120);  // torchvision resnet18 state_dict (122) minus fc.weight, fc.bias
  CHECK((bn_keys == expected_keys({"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}, true)));
  CHECK((batch_norm->named_buffers()["4.0.bn1.num_batches_tracked"].scalar_type() == torch::kLong));
  params = 0;
  for (const auto& p : batch_norm->parameters()) params += p.numel();
  CHECK(params == 11176512);  // torchvision: sum of resnet18 parameter sizes without fc

  ResNet18 group_norm(ResNet18Options{NormKind::GroupNorm, true});
  CHECK((shapes_of(*group_norm) == expected_keys({"weight", "bias"}, true)));
}

TEST_CASE("resnet18 maps an image to the stride-32 layer4 feature map") {
  ResNet18 net(ResNet18Options{NormKind::FrozenBatchNorm, false});
  CHECK((net->forward(torch::randn({2, 3, 64, 96})).sizes() == torch::IntArrayRef{2, 512, 2, 3}));
  CHECK((net->forward(torch::randn({1, 3, 70, 70})).sizes() == torch::IntArrayRef{1, 512, 3, 3}));
}

TEST_CASE("resnet18 loads torchvision-named weights into either naming scheme") {
  lrhost::test::TempDir dir("resnet_weights");
  torch::manual_seed(1);
  ResNet18 source(ResNet18Options{NormKind::BatchNorm, false});
  source->eval();
  // Make the statistics non-trivial so that a missed buffer would change the output.
  for (auto& item : source->named_buffers())
    if (item.key().find("running_var") != std::string::npos) item.value().uniform_(0.5, 2.0);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : source->named_parameters()) tensors.emplace_back(item.key(), item.value().detach());
  for (const auto& item : source->named_buffers()) tensors.emplace_back(item.key(), item.value());
  tensors.emplace_back("fc.weight", torch::zeros({1000, 512}));  // present in torchvision files, ignored
  auto file = dir / "resnet18.safetensors";
  lrhost::io::write_safetensors(file, tensors);

  auto x = torch::randn({1, 3, 64, 64});
  for (bool numbered : {false, true}) {
    ResNet18 target(ResNet18Options{NormKind::BatchNorm, numbered});
    target->load_torchvision_weights(file);
    target->eval();
    CHECK(torch::allclose(target->forward(x), source->forward(x)));
  }
  ResNet18 frozen(ResNet18Options{NormKind::FrozenBatchNorm, false});
  frozen->load_torchvision_weights(file);  // frozen BN: same function, statistics as buffers
  CHECK(torch::allclose(frozen->forward(x), source->forward(x), 1e-4, 1e-5));

  ResNet18 group_norm(ResNet18Options{NormKind::GroupNorm, true});
  CHECK_THROWS_WITH_AS(group_norm->load_torchvision_weights(file), doctest::Contains("GroupNorm"),
                       lrhost::util::ConfigError);

  tensors.erase(tensors.begin());  // drop conv1.weight
  lrhost::io::write_safetensors(file, tensors);
  CHECK_THROWS_WITH_AS(frozen->load_torchvision_weights(file), doctest::Contains("no tensor 'conv1.weight'"),
                       lrhost::util::DataError);
}
