// Which modules of a policy become FSDP wrap units: the instances of the module types the recipe
// names (accelerator.fsdp.wrap_modules) or, when it names none, the types the policy declares
// (Policy::fsdp_wrap_module_types). A unit owns every parameter under its module, trainable or
// frozen; the parameters outside all units form the root unit. A unit's parameters are sharded as
// one or more parameter groups, one flat all-gather each: trainable and frozen parameters apart
// (frozen ones take no gradient, reduction or optimizer state) and one group per dtype (SmolVLA's
// bf16 layers hold fp32 cross-attention k/v). A type name that matches no module,
// a type whose forward cannot run FSDP's hooks, or no units at all is an error that lists the
// policy's module types, never a silent root-only wrap.
#pragma once
#include <string>
#include <vector>

#include "host/dist/fsdp/shard_layout.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::dist::fsdp {

struct WrapUnit {
  std::string path;                     // module path ("model.encoder.layers.0"); "" for the root unit
  std::string module_type;              // "ACTEncoderLayer"; "root" for the root unit
  torch::nn::Module* module = nullptr;  // the policy itself for the root unit
  std::vector<std::pair<std::string, torch::Tensor>> params;  // all, by state_dict key, module order
};

// The parameters of one flat all-gather: all trainable or all frozen, all of one dtype.
struct ParamGroupSpec {
  bool frozen = false;
  std::vector<std::pair<std::string, torch::Tensor>> params;
};

// `unit`'s parameter groups: trainable before frozen, then dtypes in order of first appearance.
std::vector<ParamGroupSpec> param_groups(const WrapUnit& unit);

// Units in module order, then the root unit (present only when it has parameters).
// `wrap_modules` empty: the policy's declared types.
std::vector<WrapUnit> find_wrap_units(policy::Policy& policy, const std::vector<std::string>& wrap_modules);

// The layouts of find_wrap_units' units' parameter groups for a shard group of `shard_size` ranks,
// in unit order ("root" for the root unit).
std::vector<UnitLayout> plan_unit_layouts(policy::Policy& policy, const std::vector<std::string>& wrap_modules,
                                          int shard_size);
// The same for given units (find_wrap_units' or a planned policy's, whose tensors may be meta).
std::vector<UnitLayout> plan_unit_layouts(const std::vector<WrapUnit>& units, int shard_size);

}  // namespace lrhost::dist::fsdp
