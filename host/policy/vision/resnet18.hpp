// torchvision's ResNet-18 trunk (conv1 .. layer4, no avgpool/fc) as the vision backbone of ACT and
// Diffusion, with torchvision's state_dict names so LeRobot checkpoints map key for key. The norm
// layers vary as in LeRobot: FrozenBatchNorm2d (ACT), BatchNorm2d with num_batches_tracked, or
// GroupNorm with C/16 groups (Diffusion's use_group_norm). Children are registered either by name
// (conv1, bn1, layer1..4: ACT's IntermediateLayerGetter) or by position "0".."7" (Diffusion's
// nn.Sequential(*children()[:-2])). Pretrained weights come only from a local file holding a
// torchvision resnet18 state_dict (backbone_weights.hpp: a path, or torchvision's weight name looked
// up in the torch hub cache); nothing is ever downloaded. Two exact-math fast paths
// (policy/fast_paths.hpp): frozen batch norms folded into their convolutions, and the trunk in
// channels-last memory format; the state dict is the same either way.
#pragma once
#include <torch/torch.h>

#include <filesystem>

namespace lrhost::policy::vision {

enum class NormKind { FrozenBatchNorm, BatchNorm, GroupNorm };

struct ResNet18Options {
  NormKind norm = NormKind::FrozenBatchNorm;
  bool numbered_children = false;  // "0".."7" instead of conv1, bn1, relu, maxpool, layer1..layer4
};

// torchvision.ops.FrozenBatchNorm2d: batch norm whose statistics and affine terms are buffers.
class FrozenBatchNorm2dImpl : public torch::nn::Module {
 public:
  explicit FrozenBatchNorm2dImpl(int64_t channels);
  torch::Tensor forward(const torch::Tensor& x);
  // forward(conv(x)) as one convolution with the folded weight conv.weight * scale and bias
  // shift (conv has no bias); the gradient reaches conv.weight through the product.
  torch::Tensor forward_folded(torch::nn::Conv2dImpl& conv, const torch::Tensor& x);

 private:
  // torchvision's formula (eps 1e-5) as one scale and shift per channel.
  std::pair<torch::Tensor, torch::Tensor> scale_and_shift() const;
  torch::Tensor weight_, bias_, running_mean_, running_var_;
};
TORCH_MODULE(FrozenBatchNorm2d);

// torchvision.models.resnet.BasicBlock (expansion 1).
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in_channels, int64_t channels, int64_t stride, NormKind norm);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::AnyModule bn1_, bn2_;
  torch::nn::Sequential downsample_{nullptr};  // conv, norm (registered as downsample.0, .1)
  torch::nn::Conv2d downsample_conv_{nullptr};
  torch::nn::AnyModule downsample_norm_;
};
TORCH_MODULE(BasicBlock);

class ResNet18Impl : public torch::nn::Module {
 public:
  explicit ResNet18Impl(ResNet18Options options = {});
  // (B, 3, H, W) -> the layer4 feature map (B, 512, ceil(H/32), ceil(W/32)).
  torch::Tensor forward(const torch::Tensor& x);
  // Copies a torchvision resnet18 state_dict (fc.* ignored; num_batches_tracked only where this trunk
  // has it) from `weights`: a .safetensors/.pth path or a torchvision weight name
  // (resolve_backbone_weights). Missing keys or other shapes are errors naming the file and key.
  void load_torchvision_weights(const std::string& weights);
  static constexpr int64_t kOutChannels = 512;

 private:
  ResNet18Options options_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::AnyModule bn1_;
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr}, layer4_{nullptr};
};
TORCH_MODULE(ResNet18);

}  // namespace lrhost::policy::vision
