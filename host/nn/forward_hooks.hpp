// Forward hooks on module instances, the C++ stand-in for PyTorch's nn.Module hooks (LibTorch modules
// have none); like PyTorch's, they belong to the module layer, so any nn layer can run its own. FSDP (host/dist/fsdp)
// installs hooks on its wrap units and on the policy (root unit): pre_forward gathers the unit's parameters,
// post_forward may reshard them and registers pre-backward hooks on the outputs and, for frozen parameters, hooks on
// the inputs' gradients that tell when the unit's backward is over. A module type takes part by running its forward
// body through hooked_forward(*this, ...) and registering its type name with register_hookable_module_type, so FSDP can
// refuse to wrap a type whose forward would never call it. Without installed hooks, hooked_forward costs one hash
// lookup.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace lrhost::nn {

class ForwardHooks {
 public:
  virtual ~ForwardHooks() = default;
  virtual void pre_forward() = 0;
  // `outputs`: the tensors the forward returned (those requiring grad get pre-backward hooks).
  // `inputs`: the tensors the forward read that may carry a gradient (empty when the call site
  // names none): once their gradients are computed, the unit's backward is over.
  virtual void post_forward(const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs) = 0;
};

// Installs (or, with null, removes) the hooks of one module instance.
void set_forward_hooks(const torch::nn::Module& module, std::shared_ptr<ForwardHooks> hooks);
ForwardHooks* forward_hooks(const torch::nn::Module& module);

// Module types (module_type_name) whose forward runs hooked_forward.
bool register_hookable_module_type(const std::string& type);
bool supports_forward_hooks(const std::string& type);

inline void collect_outputs(const torch::Tensor& t, std::vector<torch::Tensor>& out) {
  out.push_back(t);
}
template <class... T>
void collect_outputs(const std::tuple<T...>& tuple, std::vector<torch::Tensor>& out) {
  std::apply([&](const auto&... item) { (collect_outputs(item, out), ...); }, tuple);
}
inline void collect_outputs(const std::vector<torch::Tensor>& tensors, std::vector<torch::Tensor>& out) {
  out.insert(out.end(), tensors.begin(), tensors.end());
}

// Runs `body` (the module's forward, reading `inputs`) between its installed hooks.
template <class Body>
auto hooked_forward(const torch::nn::Module& module, const std::vector<torch::Tensor>& inputs, Body&& body)
    -> decltype(body()) {
  ForwardHooks* hooks = forward_hooks(module);
  if (hooks == nullptr) return body();
  hooks->pre_forward();
  auto result = body();
  std::vector<torch::Tensor> outputs;
  collect_outputs(result, outputs);
  hooks->post_forward(inputs, outputs);
  return result;
}

template <class Body>
auto hooked_forward(const torch::nn::Module& module, Body&& body) -> decltype(body()) {
  return hooked_forward(module, {}, std::forward<Body>(body));
}

}  // namespace lrhost::nn
