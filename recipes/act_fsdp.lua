-- Trains LeRobot's ACT policy with FSDP: parameters, gradients and AdamW state sharded across ranks
-- (ZeRO-3 by default), on a LeRobot dataset — by default lrhost's built-in pushing task. The wrap
-- units are ACT's encoder and decoder layers (the policy declares them); everything else (backbone,
-- projections, heads) is the root unit. Same loop as act_ddp.lua (recipes/lib/policy_training.lua):
-- LeRobot's preset optimizer, checkpoints (a full pretrained_model/ LeRobot loads, plus per-rank
-- optimizer shards that resume at any rank count), held-out evaluation.
--   lrhost recipes/act_fsdp.lua --nproc 2 --device cpu steps=200            (quick CPU run)
--   lrhost recipes/act_fsdp.lua --gpus 4 accelerator.mixed_precision=bf16
--   lrhost recipes/act_fsdp.lua --gpus 4 accelerator.fsdp.reshard_after_forward=false   (ZeRO-2)
--   lrhost show recipes/act_fsdp.lua --gpus 8                                (memory plan per rank)
-- Hybrid sharding (shard within groups, replicate across): recipes/examples/act_hybrid.lua.
local lr = require "lrhost"

local cfg = lr.config {
  seed = 1000,
  steps = 2000,
  batch_size = 8,          -- per rank (LeRobot's default)
  num_workers = 2,
  log_freq = 50,
  save_freq = 1000,        -- 0: only at the end
  keep_last = 0,
  output_dir = "",         -- "": the run folder (outputs/lrhost/<time>_act_fsdp)
  resume = "auto",        -- false: always start at step 1; true: must resume; "auto": if a checkpoint exists
  eval_episodes = 4,
  eval_batches = 32,
  min_gain = 0.0,
  dataset = { root = "" },
  policy = lr.policy.defaults("act", { chunk_size = 20, n_action_steps = 20 }),
  optimizer = { grad_clip_norm = 10.0 },
  accelerator = {
    mixed_precision = "no",            -- bf16: gathered parameters in bf16 over fp32 shards
    gradient_accumulation_steps = 1,
    nonfinite = "error",               -- or "skip": drop a step with a non-finite loss or gradient norm
    max_skipped_steps = 10,            -- ... at most this many times
    -- reshard_after_forward: true = ZeRO-3 (FULL_SHARD), false = ZeRO-2 (SHARD_GRAD_OP).
    -- wrap_modules: "" = the policy's declared units, or e.g. "ACTEncoderLayer,ACTDecoderLayer".
    fsdp = { reshard_after_forward = true, wrap_modules = "" },
  },
  -- dp_shard = -1: one shard group over every rank; dp_shard = 1 would be plain DDP.
  parallelism = { dp_shard = -1, dp_replicate = 1 },
}

require("policy_training").run(lr, cfg)
