// Example batches from a policy's features, and the tensor bytes a training forward keeps alive.
#include "host/policy/activation_probe.hpp"

#include <spdlog/spdlog.h>

#include "host/policy/tensor_bytes_meter.hpp"
#include "host/util/error.hpp"
#include "host/util/heap_bytes.hpp"

namespace lrhost::policy {
namespace {

struct ForwardCost {
  int64_t tensors = 0;  // CPU tensor storages the forward allocated and still holds
  int64_t heap = 0;     // growth of the live heap, the same moment
};

// What one training forward on `batch` leaves alive while its output (and with it the graph) is, or
// the most that forward and backward held at once.
ForwardCost forward_cost(Policy& policy, const Batch& batch, ActivationMeasure measure) {
  // The meter outlives the output, so every storage it saw allocated is also seen freed and
  // ATen's profiler bookkeeping keeps no stale entries; the batch was allocated before it.
  CpuTensorBytesMeter meter;
  const int64_t heap_before = util::live_heap_bytes();
  auto output = policy.run(batch);
  if (measure == ActivationMeasure::kept_for_backward)
    return {meter.net_bytes(), util::live_heap_bytes() - heap_before};
  if (!output.loss.requires_grad())
    throw util::ConfigError("the activation probe's backward: the loss needs no gradient (nothing trains)");
  output.loss.backward();
  return {meter.peak_bytes(), 0};  // the heap's peak is not tracked: no cross-check
}

// The parameters' gradients as they were before the probe, put back after it.
struct SavedGradients {
  explicit SavedGradients(Policy& policy) {
    for (auto& p : policy.parameters()) saved.emplace_back(p, p.grad().defined() ? p.grad().clone() : torch::Tensor());
  }
  ~SavedGradients() {
    for (auto& [param, grad] : saved) param.mutable_grad() = grad;
  }
  std::vector<std::pair<torch::Tensor, torch::Tensor>> saved;
};

}  // namespace

Batch example_batch(const Policy& policy, int64_t batch_size) {
  if (auto own = policy.example_batch(batch_size)) return *own;
  const auto features = policy.features();
  const auto deltas = policy.delta_indices();
  auto frames = [&](const std::string& key) -> int64_t {
    auto found = deltas.find(key);
    return found != deltas.end() && found->second.size() > 1 ? static_cast<int64_t>(found->second.size()) : 0;
  };
  Batch batch;
  auto add = [&](const PolicyFeature& feature) {
    std::vector<int64_t> shape{batch_size};
    const int64_t window = frames(feature.key);
    if (window > 0) shape.push_back(window);
    shape.insert(shape.end(), feature.shape.begin(), feature.shape.end());
    batch[feature.key] = torch::zeros(shape);
    if (window > 0) batch[feature.key + "_is_pad"] = torch::zeros({batch_size, window}, torch::kBool);
  };
  for (const auto& feature : features.inputs) add(feature);
  for (const auto& feature : features.outputs) add(feature);
  if (auto language = policy.language_settings()) {
    batch["observation.language.tokens"] = torch::zeros({batch_size, language->max_length}, torch::kLong);
    batch["observation.language.attention_mask"] = torch::ones({batch_size, language->max_length}, torch::kBool);
  }
  return batch;
}

ActivationCost measure_activations(Policy& policy, const std::function<Batch(int64_t)>& make_batch,
                                   ActivationMeasure measure) {
  auto batch = [&](int64_t size) { return make_batch ? make_batch(size) : example_batch(policy, size); };
  const bool was_training = policy.is_training();
  policy.train(true);
  torch::AutoGradMode grad(true);
  ActivationCost cost;
  try {
    SavedGradients gradients(policy);
    // A first pass makes what lives on past it (lazily built tables, caches, and with a backward
    // the gradients, which each further pass accumulates into) before measuring.
    forward_cost(policy, batch(1), measure);
    const auto one = forward_cost(policy, batch(1), measure);
    const auto two = forward_cost(policy, batch(2), measure);
    cost.one_sample = one.tensors;
    cost.per_sample = two.tensors - one.tensors;
    cost.heap_per_sample = two.heap - one.heap;
  } catch (...) {
    policy.train(was_training);
    throw;
  }
  policy.train(was_training);
  spdlog::debug("activation probe: {} tensor bytes per sample; the live heap ({}) grew by {} bytes per sample",
                cost.per_sample, util::heap_allocator_name(), cost.heap_per_sample);
  return cost;
}

}  // namespace lrhost::policy
