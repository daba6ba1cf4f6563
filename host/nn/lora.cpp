// LoRA adapters on Linear layers; see lora.hpp.
#include "host/nn/lora.hpp"

#include <atomic>
#include <cmath>
#include <string>

#include "host/nn/dropout.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {
namespace {

// Whether this process has attached any adapter: lora_parts runs on every Linear's forward
// (apply_linear), and without adapters it answers without walking the layer's children.
std::atomic<bool> any_adapter_attached{false};

}  // namespace

double LoraSettings::scaling() const {
  return use_rslora ? alpha / std::sqrt(static_cast<double>(r)) : alpha / static_cast<double>(r);
}

LoraUpImpl::LoraUpImpl(int64_t r, int64_t out_features, double scaling_in, double dropout_in)
    : scaling(scaling_in), dropout(dropout_in) {
  // Drawn as nn.Linear(r, out, bias=False) draws its weight.
  weight = register_parameter("weight", torch::empty({out_features, r}));
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
}

void add_lora(torch::nn::LinearImpl& layer, const LoraSettings& settings) {
  if (settings.r < 1) throw util::ConfigError("LoRA rank r must be >= 1, got " + std::to_string(settings.r));
  if (!(settings.dropout >= 0 && settings.dropout < 1))
    throw util::ConfigError("LoRA dropout must be in [0, 1), got " + std::to_string(settings.dropout));
  if (lora_parts(layer)) throw util::ConfigError("this Linear has a LoRA adapter already");
  const auto in = layer.options.in_features(), out = layer.options.out_features();
  // PEFT's order: A drawn by its Linear, B by its Linear, then the reset.
  torch::nn::Linear down(torch::nn::LinearOptions(in, settings.r).bias(false));
  LoraUp up(settings.r, out, settings.scaling(), settings.dropout);
  {
    torch::NoGradGuard no_grad;
    switch (settings.init) {
      case LoraInit::kaiming_uniform:
        torch::nn::init::kaiming_uniform_(down->weight, std::sqrt(5.0));
        up->weight.zero_();
        break;
      case LoraInit::gaussian:
        down->weight.normal_(0.0, 1.0 / static_cast<double>(settings.r));
        up->weight.zero_();
        break;
      case LoraInit::none:
        break;
    }
  }
  // The weight tells device and dtype even when its storage is released (deferred init).
  const auto& weight = layer.weight;
  const auto dtype = weight.scalar_type();
  const auto adapter_dtype = (dtype == torch::kHalf || dtype == torch::kBFloat16) ? torch::kFloat32 : dtype;
  down->to(dtype);
  up->to(dtype);
  down->to(weight.device(), adapter_dtype);
  up->to(weight.device(), adapter_dtype);
  layer.register_module("lora_A", down);
  layer.register_module("lora_B", up);
  any_adapter_attached.store(true, std::memory_order_relaxed);
}

LoraParts lora_parts(const torch::nn::LinearImpl& layer) {
  LoraParts parts;
  if (!any_adapter_attached.load(std::memory_order_relaxed)) return parts;
  for (const auto& child : layer.named_children()) {
    if (child.key() == "lora_A") parts.down = child.value()->as<torch::nn::LinearImpl>();
    if (child.key() == "lora_B") parts.up = child.value()->as<LoraUpImpl>();
  }
  if (!parts.down || !parts.up) return {};
  return parts;
}

torch::Tensor add_lora_output(const LoraParts& adapter, const torch::Tensor& input, const torch::Tensor& base_output) {
  const auto& a = adapter.down->weight;
  auto x = input.scalar_type() == a.scalar_type() ? input : input.to(a.scalar_type());
  if (adapter.up->dropout > 0) x = nn::dropout(x, adapter.up->dropout, adapter.up->is_training());
  auto delta = torch::linear(torch::linear(x, a), adapter.up->weight) * adapter.up->scaling;
  return (base_output + delta).to(base_output.scalar_type());
}

torch::Tensor merged_lora_weight(const torch::nn::LinearImpl& layer) {
  const auto adapter = lora_parts(layer);
  if (!adapter) throw util::ConfigError("merged_lora_weight: this Linear has no LoRA adapter");
  torch::NoGradGuard no_grad;
  auto delta = torch::matmul(adapter.up->weight.to(torch::kFloat32), adapter.down->weight.to(torch::kFloat32)) *
               adapter.up->scaling;
  return (layer.weight.to(torch::kFloat32) + delta).to(layer.weight.scalar_type());
}

void merge_lora(torch::nn::LinearImpl& layer) {
  auto merged = merged_lora_weight(layer);
  {
    torch::NoGradGuard no_grad;
    layer.weight.copy_(merged);
  }
  layer.unregister_module("lora_A");
  layer.unregister_module("lora_B");
}

}  // namespace lrhost::nn
