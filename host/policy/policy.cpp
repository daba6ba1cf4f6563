// Shared parts of the policy interface.
#include "host/policy/policy.hpp"

#include "host/util/error.hpp"

namespace lrhost::policy {

PolicyOutput Policy::run(const Batch& batch) {
  PolicyOutput out;
  {
    accel::AutocastGuard autocast(autocast_);
    out = forward(batch);
  }
  if (out.loss.defined() && out.loss.scalar_type() != torch::kFloat32) out.loss = out.loss.to(torch::kFloat32);
  return out;
}

std::vector<ParamGroup> Policy::param_groups() const {
  return {ParamGroup{"default", trainable_parameters(), std::nullopt, std::nullopt}};
}

std::vector<torch::Tensor> Policy::trainable_parameters() const {
  std::vector<torch::Tensor> result;
  for (const auto& p : parameters())
    if (p.requires_grad()) result.push_back(p);
  return result;
}

int64_t Policy::num_parameters() const {
  int64_t total = 0;
  for (const auto& p : parameters()) total += p.numel();
  return total;
}

const torch::Tensor& require_input(const Batch& batch, const std::string& key, const std::string& policy_type) {
  auto found = batch.find(key);
  if (found != batch.end()) return found->second;
  std::string present;
  for (const auto& [name, tensor] : batch) present += (present.empty() ? "'" : ", '") + name + "'";
  throw util::ConfigError(policy_type + " policy: the batch has no '" + key + "' (it has " +
                          (present.empty() ? "no keys" : present) + ")");
}

torch::Tensor Policy::select_action(const Batch&) {
  throw util::NotImplemented("policy '" + type() + "' has no select_action yet");
}

}  // namespace lrhost::policy
