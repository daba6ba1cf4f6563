// The CUDA-graph capture decision; see cuda_graph_plan.hpp.
#include "host/accel/cuda_graph_plan.hpp"

#include <sstream>

namespace lrhost::accel {

CudaGraphDecision decide_cuda_graph(const CudaGraphRequest& request) {
  auto refuse = [](std::string reason) { return CudaGraphDecision{false, std::move(reason)}; };
  if (!request.requested) return {};
  if (!request.cuda) return refuse("the device is not a GPU");
  if (request.world_size > 1)
    return refuse("the gradient all-reduce / FSDP collectives of " + std::to_string(request.world_size) +
                  " ranks are not captured (only single-process training is)");
  if (request.sharded) return refuse("FSDP frees and refills parameter storage around every unit's forward");
  if (request.gradient_accumulation_steps > 1)
    return refuse("gradient accumulation (" + std::to_string(request.gradient_accumulation_steps) +
                  " steps) alternates steps with and without an optimizer update");
  if (request.mixed_precision == MixedPrecision::fp16)
    return refuse("fp16 loss scaling decides on the host whether each step is applied");
  if (request.nonfinite == NonfinitePolicy::skip)
    return refuse("accelerator.nonfinite = \"skip\" decides on the host whether each step is applied");
  if (!optim::is_adam_family(request.optimizer_kind))
    return refuse(std::string("the ") + optim::optimizer_kind_name(request.optimizer_kind) +
                  " optimizer has no capturable step (adam and adamw do)");
  if (request.policy_blocker) return refuse(*request.policy_blocker);
  return {true, ""};
}

std::string batch_signature(const std::map<std::string, torch::Tensor>& batch) {
  std::ostringstream out;
  for (const auto& [key, tensor] : batch) {
    if (out.tellp() > 0) out << ' ';
    out << key << ':';
    if (!tensor.defined()) {
      out << "undefined";
      continue;
    }
    out << c10::toString(tensor.scalar_type()) << '@' << tensor.device() << tensor.sizes();
  }
  return out.str();
}

}  // namespace lrhost::accel
