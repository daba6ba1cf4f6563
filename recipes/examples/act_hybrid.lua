-- Hybrid sharding (HSDP) for ACT: parameters are sharded within groups of `dp_shard` ranks (e.g. the
-- GPUs of one node, which share fast links) and the groups are replicated, with gradients
-- all-reduced across them — less memory than DDP, less cross-node traffic than one global shard
-- group. It is recipes/act_fsdp.lua with a different `parallelism` table.
--   lrhost recipes/examples/act_hybrid.lua --gpus 4                        (2 groups of 2 GPUs)
--   lrhost recipes/examples/act_hybrid.lua --nnodes 2 --gpus 8 parallelism.dp_shard=8
--   lrhost recipes/examples/act_hybrid.lua --nproc 4 --device cpu steps=50
--   lrhost show recipes/examples/act_hybrid.lua --gpus 4
local lr = require "lrhost"
local training = require "policy_training"

local cfg = lr.config(training.defaults {
  policy = lr.policy.defaults("act", { chunk_size = 20, n_action_steps = 1, pretrained_backbone_weights = "" }),
  accelerator = { fsdp = { reshard_after_forward = true, wrap_modules = "" } },
  -- Shard groups of 2 ranks; dp_replicate = -1: as many groups as the ranks allow.
  parallelism = { dp_shard = 2, dp_replicate = -1 },
})

training.run(lr, cfg)
