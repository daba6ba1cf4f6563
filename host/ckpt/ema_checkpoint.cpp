// The EMA's files in a checkpoint; see ema_checkpoint.hpp.
#include "host/ckpt/ema_checkpoint.hpp"

#include <set>

#include "host/ckpt/adapter_folder.hpp"
#include "host/io/safetensors.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {

dist::fsdp::StateFilter tracked_by(const optim::WeightEma& ema) {
  auto names = std::make_shared<std::set<std::string>>();
  for (const auto& [name, shadow] : ema.shadows()) names->insert(name);
  return [names](const std::string& name) { return names->count(name) > 0; };
}

std::vector<std::pair<std::string, torch::Tensor>> ema_policy_state(
    const policy::Policy& policy, std::vector<std::pair<std::string, torch::Tensor>> live,
    const std::map<std::string, torch::Tensor>& ema_values) {
  for (auto& [name, tensor] : live) {
    auto found = ema_values.find(name);
    if (found != ema_values.end()) tensor = found->second.detach().to(tensor.scalar_type());
  }
  return policy.lora_adapters() ? adapter_state(policy, std::move(live)) : live;
}

void load_ema_shadow_file(const std::filesystem::path& state_dir, optim::WeightEma& ema,
                          const dist::fsdp::FsdpEngine* fsdp) {
  const auto file = state_dir / optim::kEmaShadowFile;
  auto content = io::read_safetensors(file);
  std::map<std::string, torch::Tensor> shadows;
  for (auto& [name, tensor] : content.tensors) {
    const auto* spec = fsdp ? fsdp->view().find(name) : nullptr;
    if (spec != nullptr && tensor.sizes().vec() != spec->shape)
      throw util::DataError(file.string() + ": the EMA shadow of '" + name + "' is " + c10::str(tensor.sizes()) +
                            ", the parameter is " + c10::str(c10::IntArrayRef(spec->shape)));
    shadows.emplace(name, spec ? dist::fsdp::shard_of(*spec, tensor, fsdp->view().shard_rank) : tensor);
  }
  ema.load_shadows(shadows, file.string());
}

}  // namespace lrhost::ckpt
