// Full state dict gather / load over FSDP's units, local shards by name, and memory accounting.
#include "host/dist/fsdp/fsdp_state_dict.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "host/dist/fsdp/fsdp_collectives.hpp"
#include "host/util/error.hpp"

namespace lrhost::dist::fsdp {

std::vector<std::pair<std::string, torch::Tensor>> gather_full_state(policy::Policy& policy, const ParamGroups& groups,
                                                                     Comm& shard_comm, bool keep,
                                                                     const StateFilter& include) {
  torch::NoGradGuard no_grad;
  const auto wanted = [&](const std::string& name) { return !include || include(name); };
  std::map<const torch::TensorImpl*, torch::Tensor> full;
  for (const auto& group : groups) {
    const auto& layout = group->layout();
    if (std::none_of(layout.params.begin(), layout.params.end(), [&](const auto& spec) { return wanted(spec.name); }))
      continue;
    if (group->state() != ParamState::sharded)
      throw util::Error("FSDP: the full state dict was asked for during forward/backward of unit '" + layout.name +
                        "'");
    auto input = torch::cat([&] {
      std::vector<torch::Tensor> pieces;
      for (const auto& p : group->params()) pieces.push_back(p.shard().reshape(-1));
      return pieces;
    }());
    torch::Tensor out;
    all_gather_flat_async(shard_comm, layout, input, out)->wait();
    if (!keep) continue;  // `out` and `input` are freed here, before the next unit is gathered
    auto per_rank = per_rank_rows(out, layout).to(torch::kCPU);
    for (std::size_t i = 0; i < group->params().size(); ++i) {
      const auto& spec = layout.params[i];
      full[group->params()[i].param().unsafeGetTensorImpl()] =
          per_rank.narrow(1, group->offsets()[i], spec.shard_numel())
              .reshape({layout.shard_size * spec.rows_per_rank, spec.row_numel})
              .narrow(0, 0, spec.rows)
              .reshape(spec.shape)
              .clone();
    }
  }
  std::vector<std::pair<std::string, torch::Tensor>> entries;
  if (!keep) return entries;
  for (const auto& item : policy.named_parameters()) {
    if (!wanted(item.key())) continue;
    auto found = full.find(item.value().unsafeGetTensorImpl());
    entries.emplace_back(item.key(),
                         found != full.end() ? found->second : item.value().detach().to(torch::kCPU).clone());
  }
  for (const auto& item : policy.named_buffers())
    if (wanted(item.key())) entries.emplace_back(item.key(), item.value().detach().to(torch::kCPU).clone());
  return entries;
}

void load_full_state(policy::Policy& policy, ParamGroups& groups,
                     const std::vector<std::pair<std::string, torch::Tensor>>& state, int shard_rank,
                     const StateFilter& include) {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> by_name(state.begin(), state.end());
  for (auto& group : groups) {
    group->reshard();
    for (const auto& p : group->params()) {
      const auto& spec = p.spec();
      if (include && !include(spec.name)) continue;
      auto found = by_name.find(spec.name);
      if (found == by_name.end()) throw util::DataError("FSDP load: no tensor for parameter '" + spec.name + "'");
      if (found->second.sizes().vec() != spec.shape)
        throw util::DataError("FSDP load: parameter '" + spec.name + "' has shape " + c10::str(found->second.sizes()) +
                              ", the model expects " + c10::str(c10::IntArrayRef(spec.shape)));
      p.shard().copy_(shard_of(spec, found->second.to(p.shard().options()), shard_rank));
      by_name.erase(found);
    }
  }
  for (const auto& item : policy.named_parameters()) {
    auto found = by_name.find(item.key());
    if (found != by_name.end()) item.value().copy_(found->second);
  }
  for (const auto& item : policy.named_buffers()) {
    auto found = by_name.find(item.key());
    if (found != by_name.end()) item.value().copy_(found->second);
  }
}

torch::Tensor find_local_shard(const ParamGroups& groups, const std::string& param_name) {
  for (const auto& group : groups)
    for (const auto& p : group->params())
      if (p.spec().name == param_name) return p.param();
  throw util::ConfigError("FSDP: '" + param_name + "' is not a sharded parameter");
}

int64_t count_full_parameters(policy::Policy& policy, const ParamGroups& groups) {
  int64_t total = 0;
  for (const auto& item : policy.named_parameters()) total += item.value().numel();
  for (const auto& group : groups)
    for (const auto& p : group->params()) total += p.spec().numel() - p.param().numel();
  return total;
}

void add_memory_bytes(policy::Policy& policy, const ParamGroups& groups, int64_t& parameter_bytes,
                      int64_t& gradient_bytes) {
  std::set<const torch::TensorImpl*> sharded;
  auto bytes = [](const torch::Tensor& t) {
    return t.defined() ? static_cast<int64_t>(t.storage().nbytes() == 0 ? 0 : t.numel() * t.element_size()) : 0;
  };
  for (const auto& group : groups) {
    for (const auto& p : group->params()) {
      sharded.insert(p.param().unsafeGetTensorImpl());
      parameter_bytes += bytes(p.shard()) + bytes(p.padded());
      gradient_bytes += bytes(p.param().grad()) + bytes(p.accumulated());
    }
  }
  for (const auto& item : policy.named_parameters()) {
    if (sharded.count(item.value().unsafeGetTensorImpl())) continue;
    parameter_bytes += bytes(item.value());
    gradient_bytes += bytes(item.value().grad());
  }
}

}  // namespace lrhost::dist::fsdp
