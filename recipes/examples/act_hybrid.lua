-- Hybrid sharding (HSDP) for ACT: parameters are sharded within groups of `dp_shard` ranks (e.g. the
-- GPUs of one node, which share fast links) and the groups are replicated, with gradients
-- all-reduced across them — less memory than DDP, less cross-node traffic than one global shard
-- group. It is recipes/act_fsdp.lua with a different `parallelism` table.
--   lrhost recipes/examples/act_hybrid.lua --gpus 4                        (2 groups of 2 GPUs)
--   lrhost recipes/examples/act_hybrid.lua --nnodes 2 --gpus 8 parallelism.dp_shard=8
--   lrhost recipes/examples/act_hybrid.lua --nproc 4 --device cpu steps=50
--   lrhost show recipes/examples/act_hybrid.lua --gpus 4
local lr = require "lrhost"

local cfg = lr.config {
  seed = 1000,
  steps = 2000,
  batch_size = 8,
  num_workers = 2,
  log_freq = 50,
  save_freq = 1000,
  keep_last = 0,
  output_dir = "",
  resume = "auto",        -- false: always start at step 1; true: must resume; "auto": if a checkpoint exists
  eval_episodes = 4,
  eval_batches = 32,
  min_gain = 0.0,
  dataset = { root = "" },
  policy = lr.policy.defaults("act", { chunk_size = 20, n_action_steps = 20 }),
  optimizer = { grad_clip_norm = 10.0 },
  accelerator = { mixed_precision = "no", gradient_accumulation_steps = 1, nonfinite = "error",
                  max_skipped_steps = 10, fsdp = { reshard_after_forward = true, wrap_modules = "" } },
  -- Shard groups of 2 ranks; dp_replicate = -1: as many groups as the ranks allow.
  parallelism = { dp_shard = 2, dp_replicate = -1 },
}

require("policy_training").run(lr, cfg)
