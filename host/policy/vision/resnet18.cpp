// ResNet-18 trunk: construction with torchvision's init (Kaiming-normal fan-out convs, unit norms),
// forward to layer4, and loading torchvision weights (backbone_weights.hpp finds and reads the file).
#include "host/policy/vision/resnet18.hpp"

#include <map>

#include "host/policy/fast_paths.hpp"
#include "host/policy/vision/backbone_weights.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::vision {
namespace {

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  torch::nn::Conv2d layer(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
  torch::nn::init::kaiming_normal_(layer->weight, 0.0, torch::kFanOut, torch::kReLU);
  return layer;
}

torch::nn::AnyModule make_norm(int64_t channels, NormKind kind) {
  switch (kind) {
    case NormKind::FrozenBatchNorm:
      return torch::nn::AnyModule(FrozenBatchNorm2d(channels));
    case NormKind::BatchNorm:
      return torch::nn::AnyModule(torch::nn::BatchNorm2d(channels));
    case NormKind::GroupNorm:
      return torch::nn::AnyModule(torch::nn::GroupNorm(channels / 16, channels));
  }
  throw util::Error("unknown norm kind");
}

// `norm` applied to `conv`'s output, folded into the convolution when it is a frozen batch norm
// and the fast path is on.
torch::Tensor conv_then_norm(torch::nn::Conv2dImpl& conv, torch::nn::AnyModule& norm, const torch::Tensor& x) {
  auto* frozen = norm.ptr()->as<FrozenBatchNorm2dImpl>();
  if (frozen != nullptr && fast_paths().fold_frozen_batch_norm) return frozen->forward_folded(conv, x);
  return norm.forward(conv.forward(x));
}

// The blocks are built one statement each, first block first as torchvision does: the order of a
// call's arguments is up to the compiler, and each block draws its initial weights from the RNG.
torch::nn::Sequential make_layer(int64_t in, int64_t out, int64_t stride, NormKind norm) {
  BasicBlock first(in, out, stride, norm);
  BasicBlock second(out, out, 1, norm);
  return torch::nn::Sequential(first, second);
}

}  // namespace

FrozenBatchNorm2dImpl::FrozenBatchNorm2dImpl(int64_t channels) {
  weight_ = register_buffer("weight", torch::ones({channels}));
  bias_ = register_buffer("bias", torch::zeros({channels}));
  running_mean_ = register_buffer("running_mean", torch::zeros({channels}));
  running_var_ = register_buffer("running_var", torch::ones({channels}));
}

std::pair<torch::Tensor, torch::Tensor> FrozenBatchNorm2dImpl::scale_and_shift() const {
  auto scale = weight_ * (running_var_ + 1e-5).rsqrt();
  auto shift = bias_ - running_mean_ * scale;
  return {scale, shift};
}

torch::Tensor FrozenBatchNorm2dImpl::forward(const torch::Tensor& x) {
  auto [scale, shift] = scale_and_shift();
  // The shift is added in place: backward needs neither the product nor the sum, and one feature
  // map fewer is allocated (same values as torchvision's x * scale + bias).
  return (x * scale.view({1, -1, 1, 1})).add_(shift.view({1, -1, 1, 1}));
}

torch::Tensor FrozenBatchNorm2dImpl::forward_folded(torch::nn::Conv2dImpl& conv, const torch::Tensor& x) {
  auto [scale, shift] = scale_and_shift();
  const auto& o = conv.options;
  auto weight = conv.weight * scale.view({-1, 1, 1, 1});
  if (x.is_contiguous(torch::MemoryFormat::ChannelsLast)) weight = weight.contiguous(torch::MemoryFormat::ChannelsLast);
  return torch::conv2d(x, weight, shift, o.stride(), std::get<torch::ExpandingArray<2>>(o.padding()), o.dilation(),
                       o.groups());
}

BasicBlockImpl::BasicBlockImpl(int64_t in_channels, int64_t channels, int64_t stride, NormKind norm) {
  conv1_ = register_module("conv1", conv(in_channels, channels, 3, stride, 1));
  bn1_ = make_norm(channels, norm);
  register_module("bn1", bn1_.ptr());
  conv2_ = register_module("conv2", conv(channels, channels, 3, 1, 1));
  bn2_ = make_norm(channels, norm);
  register_module("bn2", bn2_.ptr());
  if (stride != 1 || in_channels != channels) {
    downsample_conv_ = conv(in_channels, channels, 1, stride, 0);
    downsample_norm_ = make_norm(channels, norm);
    downsample_ = torch::nn::Sequential(downsample_conv_);
    downsample_->push_back(downsample_norm_);
    register_module("downsample", downsample_);
  }
}

// In place where torchvision is (ReLU(inplace=True), out += identity): the same values and
// gradients, without allocating (and, for large images, page-faulting) three feature maps per block.
torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  auto out = conv_then_norm(*conv1_, bn1_, x).relu_();
  out = conv_then_norm(*conv2_, bn2_, out);
  auto identity = downsample_ ? conv_then_norm(*downsample_conv_, downsample_norm_, x) : x;
  out += identity;
  return torch::relu_(out);
}

ResNet18Impl::ResNet18Impl(ResNet18Options options) : options_(options) {
  const bool numbered = options_.numbered_children;
  conv1_ = register_module(numbered ? "0" : "conv1", conv(3, 64, 7, 2, 3));
  bn1_ = make_norm(64, options_.norm);
  register_module(numbered ? "1" : "bn1", bn1_.ptr());
  // Positions 2 and 3 are torchvision's parameterless relu and maxpool children.
  layer1_ = register_module(numbered ? "4" : "layer1", make_layer(64, 64, 1, options_.norm));
  layer2_ = register_module(numbered ? "5" : "layer2", make_layer(64, 128, 2, options_.norm));
  layer3_ = register_module(numbered ? "6" : "layer3", make_layer(128, 256, 2, options_.norm));
  layer4_ = register_module(numbered ? "7" : "layer4", make_layer(256, 512, 2, options_.norm));
}

torch::Tensor ResNet18Impl::forward(const torch::Tensor& x) {
  const bool channels_last = fast_paths().channels_last;
  auto input = channels_last ? x.contiguous(torch::MemoryFormat::ChannelsLast) : x;
  auto out = conv_then_norm(*conv1_, bn1_, input).relu_();
  out = torch::max_pool2d(out, 3, 2, 1);
  out = layer4_->forward(layer3_->forward(layer2_->forward(layer1_->forward(out))));
  // Callers flatten and view the feature map: hand it back in the default layout.
  return channels_last ? out.contiguous() : out;
}

void ResNet18Impl::load_torchvision_weights(const std::string& weights) {
  if (options_.norm == NormKind::GroupNorm)
    throw util::ConfigError(
        "pretrained backbone weights are batch-norm weights; they cannot initialise a GroupNorm "
        "backbone ('" +
            weights + "')",
        "set use_group_norm = false, or pretrained_backbone_weights = null");
  const auto file = resolve_backbone_weights(weights);
  const auto entries = read_backbone_state_dict(file);
  std::map<std::string, const torch::Tensor*> content;
  for (const auto& [name, tensor] : entries) content[name] = &tensor;
  // torchvision name of a child of this trunk: our names, with numbered children mapped back.
  static const char* torchvision_children[] = {"conv1",  "bn1",    "relu",   "maxpool",
                                               "layer1", "layer2", "layer3", "layer4"};
  auto torchvision_key = [&](const std::string& key) {
    if (!options_.numbered_children) return key;
    auto dot = key.find('.');
    int position = std::stoi(key.substr(0, dot));
    return std::string(torchvision_children[position]) + key.substr(dot);
  };
  torch::NoGradGuard no_grad;
  auto assign = [&](const std::string& key, torch::Tensor& target) {
    auto source_key = torchvision_key(key);
    auto found = content.find(source_key);
    const torch::Tensor* source = found == content.end() ? nullptr : found->second;
    if (!source)
      throw util::DataError(file.string() + ": no tensor '" + source_key +
                            "' (expected a torchvision resnet18 state_dict)");
    if (source->sizes() != target.sizes())
      throw util::DataError(file.string() + ": '" + source_key + "' has shape " + c10::str(source->sizes()) +
                            ", resnet18 needs " + c10::str(target.sizes()));
    target.copy_(*source);
  };
  for (auto& item : named_parameters()) assign(item.key(), item.value());
  for (auto& item : named_buffers()) assign(item.key(), item.value());
}

}  // namespace lrhost::policy::vision
