// The memory plan `lrhost show RECIPE --gpus N` prints before anything runs: the policy's FSDP wrap
// units and their sizes, and per rank the bytes of parameters, gradients and optimizer state under
// DDP, ZeRO-2 and ZeRO-3 (and hybrid sharding when the config asks for it), the peak of gathered
// parameters, the effective batch and the lr. The persistent figures use the same padded shard
// sizes as the FSDP engine, so they equal what acc:memory_stats(opt) measures after a step
// (parameters, gradients and optimizer state in each parameter's dtype; Adam/AdamW keep two
// moments, SGD with momentum one). FSDP shards frozen parameters too; DDP keeps them whole.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/dist/fsdp/shard_layout.hpp"
#include "host/optim/optimizer_kind.hpp"
#include "host/policy/planned_policy.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::accel {

struct StrategyMemory {
  std::string name;             // "ddp", "zero-2", "zero-3", "hybrid zero-3", ...
  int64_t shard_size = 1;       // ranks a parameter is split over
  int64_t parameter_bytes = 0;  // per rank, between steps
  int64_t gradient_bytes = 0;
  int64_t optimizer_bytes = 0;
  // The EMA of the weights (ema.enable): an fp32 copy of the trainable parameters, of this rank's
  // shards under FSDP; with ema.on_main_only, on rank 0 (the figure is rank 0's).
  int64_t ema_bytes = 0;
  int64_t peak_gathered_bytes = 0;  // full parameters alive at once during forward/backward
  int64_t persistent_bytes() const { return parameter_bytes + gradient_bytes + optimizer_bytes + ema_bytes; }
};

struct MemoryPlan {
  int64_t world_size = 1;
  std::string strategy;  // what the config selects, as Accelerator::strategy() names it
  optim::OptimizerKind optimizer = optim::OptimizerKind::adamw;
  double lr = 0;
  int64_t effective_batch = 0;  // batch_size x ranks x accumulation (0: no batch_size)
  int64_t batch_size = 0;       // per rank and micro-step (0: none in the config)
  // Activations one sample keeps alive from forward to backward, measured by the caller
  // (policy/activation_probe.hpp); -1: not measured.
  int64_t activation_bytes_per_sample = -1;
  int64_t parameters = 0;  // all parameters
  int64_t trainable = 0;
  // Parameter groups of the wrap units, for the selected (or, under DDP, world-size) shard group.
  std::vector<dist::fsdp::UnitLayout> units;
  std::vector<StrategyMemory> strategies;  // the selected one first
  // The learning-rate schedule of the policy's preset for the config's `steps` (empty: none), e.g.
  // SmolVLA's cosine decay with LeRobot's shrinking of warmup and decay for short runs.
  std::string schedule;
  // How activation_bytes_per_sample was obtained, when not by the default probe.
  std::string activation_note;
  // The probe ran under the policy's own bf16 autocast (GR00T's use_bf16, on the CPU too), so the
  // figure is already bf16's; otherwise it is the policy's dtypes', which bf16 autocast roughly halves.
  bool activations_under_autocast = false;
  // save_async = true: the host memory rank 0 holds for a checkpoint's copy while the writer writes
  // it (host/ckpt/checkpoint_manager.hpp): the full model's parameters plus, for the selected
  // strategy, this rank's optimizer state (and under FSDP its parameter shards, which its shard file
  // holds). 0: saves are synchronous. Checkpoint:copied_bytes() measures it.
  int64_t async_checkpoint_bytes = 0;
  // ema.on_main_only under DDP: only rank 0 holds the EMA (the strategies' ema_bytes are rank 0's).
  bool ema_on_main_only = false;
  // `show --gpu-memory`: GPU memory sizes to give the largest batch per rank for (empty: not asked).
  std::vector<int64_t> gpu_memory_bytes;
};

// What a GPU's memory holds besides the plan's figures: the CUDA context, cuBLAS/cuDNN workspaces and
// the caching allocator's fragmentation, taken as 1 GiB plus 5% of the card (an estimate from
// PyTorch's typical overheads; unmeasured here).
int64_t gpu_reserve_bytes(int64_t gpu_memory_bytes);
// The largest batch per rank whose parameters, gradients, optimizer state, gathered parameters and
// activations (per sample, as measured) fit in `gpu_memory_bytes` after the reserve; 0 when none does,
// -1 when the activations were not measured.
int64_t largest_batch_per_rank(const MemoryPlan& plan, const StrategyMemory& strategy, int64_t gpu_memory_bytes);

// `config`: the resolved recipe config (batch_size, accelerator, parallelism, optimizer); the policy
// is built but not prepared. Errors for group sizes that do not fit `world_size` or bad wrap units.
MemoryPlan make_memory_plan(policy::Policy& policy, const nlohmann::json& config, int64_t world_size);
// The same from a policy described without building it (planned_policy.hpp): its declared units only
// (another accelerator.fsdp.wrap_modules is refused), its activation figure as described.
MemoryPlan make_memory_plan(const policy::PlannedPolicy& planned, const nlohmann::json& config, int64_t world_size);

std::string render_memory_plan(const MemoryPlan& plan);
nlohmann::ordered_json memory_plan_json(const MemoryPlan& plan);

}  // namespace lrhost::accel
