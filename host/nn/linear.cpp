// apply_linear and its cache of oneDNN-reordered CPU weights; see linear.hpp.
#include "host/nn/linear.hpp"

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "host/nn/lora.hpp"
#include "host/util/env_switch.hpp"

namespace lrhost::nn {

namespace {

util::EnvSwitch& packed_switch() {
  static util::EnvSwitch on{"LRHOST_CPU_PACKED_LINEAR"};
  return on;
}

// A weight's reordered copy, valid while the weight lives and keeps the version it had.
struct PackedWeight {
  c10::weak_intrusive_ptr<c10::TensorImpl> weight;
  uint32_t version = 0;
  const void* data = nullptr;  // the storage it was packed from (set_data can swap it)
  torch::Tensor packed;
};

std::mutex cache_mutex;
std::unordered_map<const c10::TensorImpl*, PackedWeight>& cache() {
  static std::unordered_map<const c10::TensorImpl*, PackedWeight> entries;
  return entries;
}

// The two oneDNN operators are registered by libtorch_cpu under the `mkldnn` namespace (no at::
// function), so they are reached through the dispatcher; nullopt when this LibTorch lacks them.
struct OneDnnOps {
  c10::TypedOperatorHandle<at::Tensor(const at::Tensor&, std::optional<int64_t>)> reorder;
  c10::TypedOperatorHandle<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                      std::string_view, c10::List<std::optional<at::Scalar>>,
                                      std::optional<std::string_view>)>
      linear;
};

const std::optional<OneDnnOps>& onednn_ops() {
  static const std::optional<OneDnnOps> ops = []() -> std::optional<OneDnnOps> {
    if (!at::hasMKLDNN()) return std::nullopt;
    auto& dispatcher = c10::Dispatcher::singleton();
    auto reorder = dispatcher.findSchema({"mkldnn::_reorder_linear_weight", ""});
    auto linear = dispatcher.findSchema({"mkldnn::_linear_pointwise", ""});
    if (!reorder || !linear) return std::nullopt;
    return OneDnnOps{
        reorder->typed<at::Tensor(const at::Tensor&, std::optional<int64_t>)>(),
        linear
            ->typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, std::string_view,
                               c10::List<std::optional<at::Scalar>>, std::optional<std::string_view>)>()};
  }();
  return ops;
}

}  // namespace

bool uses_cpu_packed_linear(const torch::Tensor& weight, const torch::Tensor& input) {
  // Frozen weights only. A trainable weight's values can change without its version counter moving
  // (FSDP re-gathers updated shards into the same parameter through set_data), so a cached copy could
  // go stale; a frozen one only changes by explicit loads (copy_, which bumps the version). And
  // oneDNN's operator has no backward, so the input must need no gradient either.
  const bool needs_graph = torch::GradMode::is_enabled() && input.requires_grad();
  return packed_switch().enabled() && !weight.requires_grad() && !needs_graph && input.device().is_cpu() &&
         weight.device().is_cpu() && input.scalar_type() == torch::kFloat32 &&
         weight.scalar_type() == torch::kFloat32 && input.numel() > 0 && at::globalContext().userEnabledMkldnn() &&
         onednn_ops().has_value();
}

namespace {

torch::Tensor packed_weight(const torch::Tensor& weight) {
  const auto* key = weight.unsafeGetTensorImpl();
  const uint32_t version = weight._version();
  const void* data = weight.data_ptr();
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto& entries = cache();
  auto found = entries.find(key);
  if (found != entries.end() && !found->second.weight.expired() && found->second.version == version &&
      found->second.data == data)
    return found->second.packed;
  // Drop entries of freed weights (their address may be reused by the weight at hand).
  for (auto it = entries.begin(); it != entries.end();) it = it->second.weight.expired() ? entries.erase(it) : ++it;
  auto packed = onednn_ops()->reorder.call(weight.contiguous(), std::nullopt);
  entries.insert_or_assign(
      key, PackedWeight{c10::weak_intrusive_ptr<c10::TensorImpl>(weight.getIntrusivePtr()), version, data, packed});
  return packed;
}

}  // namespace

namespace {

torch::Tensor apply_base_linear(const torch::nn::Linear& layer, const torch::Tensor& input) {
  const auto& weight = layer->weight;
  const bool trainable_bias = layer->bias.defined() && layer->bias.requires_grad();
  if (trainable_bias || !uses_cpu_packed_linear(weight, input)) return torch::linear(input, weight, layer->bias);
  const std::optional<at::Tensor> bias =
      layer->bias.defined() ? std::optional<at::Tensor>(layer->bias.contiguous()) : std::nullopt;
  return onednn_ops()->linear.call(input, packed_weight(weight), bias, "none", c10::List<std::optional<at::Scalar>>(),
                                   std::optional<std::string_view>(""));
}

}  // namespace

torch::Tensor apply_linear(const torch::nn::Linear& layer, const torch::Tensor& input) {
  auto output = apply_base_linear(layer, input);
  if (const auto adapter = lora_parts(*layer)) return add_lora_output(adapter, input, output);
  return output;
}

bool set_cpu_packed_linear(bool enabled) {
  return packed_switch().set(enabled);
}

bool cpu_packed_linear_enabled() {
  return packed_switch().enabled();
}

std::size_t cpu_packed_linear_cache_size() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache().size();
}

}  // namespace lrhost::nn
