// Example batches from a policy's features, and the live-heap measurement of a training forward.
#include "host/policy/activation_probe.hpp"

#include <malloc.h>

namespace lrhost::policy {
namespace {

// Bytes the process holds in malloc'ed memory, mmapped blocks included (where LibTorch's large CPU
// tensors live).
int64_t live_heap_bytes() {
  const struct mallinfo2 info = ::mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

// Live bytes while the graph of one training forward on `batch` is alive.
int64_t forward_cost(Policy& policy, const Batch& batch) {
  const int64_t before = live_heap_bytes();
  auto output = policy.run(batch);
  const int64_t alive = live_heap_bytes() - before;
  return alive;  // output (and with it the graph) is released here
}

}  // namespace

Batch example_batch(const Policy& policy, int64_t batch_size) {
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

ActivationCost measure_activations(Policy& policy, const std::function<Batch(int64_t)>& make_batch) {
  auto batch = [&](int64_t size) { return make_batch ? make_batch(size) : example_batch(policy, size); };
  const bool was_training = policy.is_training();
  policy.train(true);
  torch::AutoGradMode grad(true);
  ActivationCost cost;
  try {
    // A first forward makes what lives on past it (lazily built tables, caches) before measuring.
    forward_cost(policy, batch(1));
    cost.one_sample = forward_cost(policy, batch(1));
    cost.per_sample = forward_cost(policy, batch(2)) - cost.one_sample;
  } catch (...) {
    policy.train(was_training);
    throw;
  }
  policy.train(was_training);
  return cost;
}

}  // namespace lrhost::policy
