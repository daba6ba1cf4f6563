// What FSDP's units hold, seen whole: the full state dict gathered from the shards (a collective)
// and loaded back into them (local), a parameter's local shard by name, the unsharded parameter
// count, and the bytes of parameters and gradients this rank holds. The FsdpEngine API
// (fsdp_engine.hpp) and Policy's ShardedStateSource forward here.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "host/dist/comm.hpp"
#include "host/dist/fsdp/fsdp_param_group.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::dist::fsdp {

// Collective over the shard group: full parameters (one flat all-gather per unit) and buffers by
// state_dict key, on the CPU in the parameter dtype. Every unit must be resharded. With `keep`
// false this rank only takes part in the gathers and returns nothing: each gathered unit is dropped
// as soon as it is passed on, so a rank that does not write the file holds about one unit at a
// time instead of the whole model on the host (PyTorch DCP's ranks_only).
// `include` (empty: every tensor) picks the state-dict keys wanted: a unit's parameter group holding
// none of them is not gathered at all (a LoRA save skips the frozen base). It must pick the same keys
// on every rank.
using StateFilter = std::function<bool(const std::string& name)>;
std::vector<std::pair<std::string, torch::Tensor>> gather_full_state(policy::Policy& policy, const ParamGroups& groups,
                                                                     Comm& shard_comm, bool keep = true,
                                                                     const StateFilter& include = {});
// Reshards every unit and sets this rank's shards (and unsharded parameters and buffers) from full
// tensors by state_dict key; no communication. Every sharded parameter `include` picks (empty: all)
// needs its tensor; the others keep their values (a LoRA checkpoint holds only the adapters).
void load_full_state(policy::Policy& policy, ParamGroups& groups,
                     const std::vector<std::pair<std::string, torch::Tensor>>& state, int shard_rank,
                     const StateFilter& include = {});
// The module parameter holding this rank's padded shard of `param_name`.
torch::Tensor find_local_shard(const ParamGroups& groups, const std::string& param_name);
// The policy's parameter count with every sharded parameter counted at its full size.
int64_t count_full_parameters(policy::Policy& policy, const ParamGroups& groups);
// Adds this rank's parameter bytes (shards, unsharded storage while allocated, parameters outside
// all units) and gradient bytes (shard and accumulated unsharded gradients) to the two totals.
void add_memory_bytes(policy::Policy& policy, const ParamGroups& groups, int64_t& parameter_bytes,
                      int64_t& gradient_bytes);

}  // namespace lrhost::dist::fsdp
