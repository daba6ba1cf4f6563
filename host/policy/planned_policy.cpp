// PlannedPolicy helpers.
#include "host/policy/planned_policy.hpp"

namespace lrhost::policy {

NamedMetaTensors PlannedPolicy::parameters() const {
  NamedMetaTensors all;
  for (const auto& unit : units) all.insert(all.end(), unit.params.begin(), unit.params.end());
  all.insert(all.end(), root.begin(), root.end());
  return all;
}

torch::Tensor meta_parameter(const std::vector<int64_t>& shape, c10::ScalarType dtype, bool requires_grad) {
  return torch::empty(shape, torch::TensorOptions().dtype(dtype).device(torch::kMeta)).set_requires_grad(requires_grad);
}

}  // namespace lrhost::policy
