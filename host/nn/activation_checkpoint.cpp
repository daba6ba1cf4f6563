// checkpoint(): a custom autograd Function that keeps a segment's inputs, not its activations, and
// recomputes the segment in backward (see activation_checkpoint.hpp for the semantics).
#include "host/nn/activation_checkpoint.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace lrhost::nn {

namespace {

// Generator states to run the recompute from: CPU always, CUDA per device an input lives on.
struct CheckpointRngState {
  torch::Tensor cpu;
  std::vector<std::pair<c10::Device, torch::Tensor>> cuda;

  static CheckpointRngState capture(const std::vector<torch::Tensor>& inputs) {
    CheckpointRngState state;
    {
      auto generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      state.cpu = generator.get_state();
    }
    for (const auto& input : inputs) {
      if (!input.defined() || !input.is_cuda()) continue;
      const auto device = input.device();
      bool seen = false;
      for (const auto& [d, s] : state.cuda) seen = seen || d == device;
      if (seen) continue;
      auto generator = at::globalContext().defaultGenerator(device);
      std::lock_guard<std::mutex> lock(generator.mutex());
      state.cuda.emplace_back(device, generator.get_state());
    }
    return state;
  }

  void restore() const {
    {
      auto generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(cpu);
    }
    for (const auto& [device, s] : cuda) {
      auto generator = at::globalContext().defaultGenerator(device);
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(s);
    }
  }
};

// The autocast settings of the devices lrhost computes on, as the first run saw them.
struct CheckpointAutocastState {
  static constexpr std::array<c10::DeviceType, 2> kDevices{c10::DeviceType::CPU, c10::DeviceType::CUDA};
  std::array<bool, 2> enabled{};
  std::array<c10::ScalarType, 2> dtype{};

  static CheckpointAutocastState capture() {
    CheckpointAutocastState state;
    for (std::size_t d = 0; d < kDevices.size(); ++d) {
      state.enabled[d] = at::autocast::is_autocast_enabled(kDevices[d]);
      state.dtype[d] = at::autocast::get_autocast_dtype(kDevices[d]);
    }
    return state;
  }
};

// While alive: the given autocast settings, and autocast's cast cache off. A cast cached during a run
// whose graph is dropped (the first run) or belongs to backward (the recompute) must not be reused by
// code outside the segment; without the cache each use casts afresh, to the same values.
class CheckpointAutocastScope {
 public:
  explicit CheckpointAutocastScope(const CheckpointAutocastState& wanted)
      : previous_(CheckpointAutocastState::capture()), previous_cache_(at::autocast::is_autocast_cache_enabled()) {
    apply(wanted);
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~CheckpointAutocastScope() {
    apply(previous_);
    at::autocast::set_autocast_cache_enabled(previous_cache_);
  }
  CheckpointAutocastScope(const CheckpointAutocastScope&) = delete;
  CheckpointAutocastScope& operator=(const CheckpointAutocastScope&) = delete;

 private:
  static void apply(const CheckpointAutocastState& state) {
    for (std::size_t d = 0; d < CheckpointAutocastState::kDevices.size(); ++d) {
      at::autocast::set_autocast_enabled(CheckpointAutocastState::kDevices[d], state.enabled[d]);
      at::autocast::set_autocast_dtype(CheckpointAutocastState::kDevices[d], state.dtype[d]);
    }
  }
  CheckpointAutocastState previous_;
  bool previous_cache_;
};

// What backward needs besides the saved inputs; travels in the autograd context as a capsule.
struct CheckpointState : torch::CustomClassHolder {
  CheckpointedFunction function;
  std::size_t num_inputs = 0;                // entries of the function's input list
  std::vector<std::size_t> defined_inputs;   // positions of the defined ones (the node's first inputs)
  std::vector<bool> input_requires_grad;     // per defined input
  std::vector<torch::Tensor> parameters;     // the node's remaining inputs (leaves: no copy is kept)
  std::size_t num_outputs = 0;               // entries of the function's output list
  std::vector<std::size_t> defined_outputs;  // positions of the defined ones (the node's outputs)
  CheckpointRngState rng;
  CheckpointAutocastState autocast;
};

// Detached copies of the saved inputs, requiring grad as the originals did, at their positions.
std::vector<torch::Tensor> checkpoint_leaf_inputs(const CheckpointState& state,
                                                  const std::vector<torch::Tensor>& defined) {
  std::vector<torch::Tensor> inputs(state.num_inputs);
  for (std::size_t k = 0; k < defined.size(); ++k)
    inputs[state.defined_inputs[k]] = defined[k].detach().requires_grad_(state.input_requires_grad[k]);
  return inputs;
}

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  // tensors = the defined inputs, then the parameters.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                c10::intrusive_ptr<CheckpointState> state, at::TensorList tensors) {
    std::vector<torch::Tensor> defined(tensors.begin(),
                                       tensors.begin() + static_cast<int64_t>(state->defined_inputs.size()));
    state->rng = CheckpointRngState::capture(defined);
    state->autocast = CheckpointAutocastState::capture();
    std::vector<torch::Tensor> outputs;
    {
      // Grad mode on (Function::apply turned it off), the graph dropped with the outputs' detach: the
      // same kernels as the recompute and as an unwrapped forward (see the header).
      torch::AutoGradMode grad_mode(true);
      CheckpointAutocastScope autocast(state->autocast);
      outputs = state->function(checkpoint_leaf_inputs(*state, defined));
    }
    ctx->save_for_backward(defined);
    ctx->set_materialize_grads(false);
    state->num_outputs = outputs.size();
    torch::autograd::variable_list result;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].defined()) continue;
      state->defined_outputs.push_back(i);
      result.push_back(outputs[i].detach());
    }
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    return result;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto state = c10::static_intrusive_pointer_cast<CheckpointState>(ctx->saved_data["state"].toCapsule());
    const auto defined = ctx->get_saved_variables();
    auto inputs = checkpoint_leaf_inputs(*state, defined);

    // Recompute from the first run's RNG state, then put the generators back where backward found them.
    const auto now = CheckpointRngState::capture(defined);
    state->rng.restore();
    std::vector<torch::Tensor> outputs;
    try {
      torch::AutoGradMode grad_mode(true);
      CheckpointAutocastScope autocast(state->autocast);
      outputs = state->function(inputs);
    } catch (...) {
      now.restore();
      throw;
    }
    now.restore();
    if (outputs.size() != state->num_outputs)
      throw std::logic_error("activation checkpoint: the recompute returned a different number of outputs");

    // Differentiate the recomputed outputs that carry a gradient with respect to the inputs and
    // parameters that need one.
    std::vector<torch::Tensor> roots, root_grads;
    for (std::size_t k = 0; k < state->defined_outputs.size(); ++k) {
      const auto& out = outputs[state->defined_outputs[k]];
      if (k >= grad_outputs.size() || !grad_outputs[k].defined() || !out.defined() || !out.requires_grad()) continue;
      roots.push_back(out);
      root_grads.push_back(grad_outputs[k]);
    }
    std::vector<torch::Tensor> targets;
    std::vector<std::size_t> target_slots;  // slot in the node's inputs (defined inputs, then parameters)
    for (std::size_t k = 0; k < defined.size(); ++k) {
      if (!state->input_requires_grad[k]) continue;
      targets.push_back(inputs[state->defined_inputs[k]]);
      target_slots.push_back(k);
    }
    const auto& params = state->parameters;
    for (std::size_t k = 0; k < params.size(); ++k) {
      if (!params[k].requires_grad()) continue;
      targets.push_back(params[k]);
      target_slots.push_back(defined.size() + k);
    }

    // One gradient per forward argument: the state (none), then each tensor.
    torch::autograd::variable_list grads(1 + defined.size() + params.size());
    if (roots.empty() || targets.empty()) return grads;
    auto computed = torch::autograd::grad(roots, targets, root_grads, /*retain_graph=*/false,
                                          /*create_graph=*/torch::GradMode::is_enabled(), /*allow_unused=*/true);
    for (std::size_t t = 0; t < targets.size(); ++t) grads[1 + target_slots[t]] = computed[t];
    return grads;
  }
};

}  // namespace

std::vector<torch::Tensor> checkpoint(const CheckpointedFunction& function, const std::vector<torch::Tensor>& inputs,
                                      const std::vector<torch::Tensor>& parameters) {
  auto state = c10::make_intrusive<CheckpointState>();
  state->function = function;
  state->num_inputs = inputs.size();
  std::vector<torch::Tensor> tensors;
  bool any_grad = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    state->defined_inputs.push_back(i);
    state->input_requires_grad.push_back(inputs[i].requires_grad());
    any_grad = any_grad || inputs[i].requires_grad();
    tensors.push_back(inputs[i]);
  }
  for (const auto& p : parameters) {
    if (!p.defined() || !p.requires_grad()) continue;
    state->parameters.push_back(p);
    tensors.push_back(p);
    any_grad = true;
  }
  // Nothing to differentiate (no_grad, inference mode, or no input or parameter requiring grad): the
  // first run would be the only one.
  if (!torch::GradMode::is_enabled() || c10::InferenceMode::is_enabled() || !any_grad) return function(inputs);

  auto defined = CheckpointFunction::apply(state, at::TensorList(tensors));
  std::vector<torch::Tensor> outputs(state->num_outputs);
  for (std::size_t k = 0; k < state->defined_outputs.size(); ++k) outputs[state->defined_outputs[k]] = defined[k];
  return outputs;
}

std::vector<torch::Tensor> trainable_parameters(std::initializer_list<const torch::nn::Module*> modules) {
  std::vector<torch::Tensor> result;
  for (const auto* module : modules) {
    if (module == nullptr) continue;
    for (const auto& p : module->parameters())
      if (p.requires_grad()) result.push_back(p);
  }
  return result;
}

}  // namespace lrhost::nn
