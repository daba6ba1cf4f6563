-- Trains LeRobot's ACT policy with FSDP: parameters, gradients and AdamW state sharded across ranks
-- (ZeRO-3 by default), on a LeRobot dataset — by default lrhost's built-in pushing task. The wrap
-- units are ACT's encoder and decoder layers (the policy declares them); everything else (backbone,
-- projections, heads) is the root unit. Same loop and defaults as act_ddp.lua
-- (recipes/lib/policy_training.lua); checkpoints hold a full pretrained_model/ LeRobot loads, plus
-- per-rank optimizer shards that resume at any rank count.
--   lrhost recipes/act_fsdp.lua --nproc 2 --device cpu steps=200            (quick CPU run)
--   lrhost recipes/act_fsdp.lua --gpus 4 accelerator.mixed_precision=bf16
--   lrhost recipes/act_fsdp.lua --gpus 4 accelerator.fsdp.reshard_after_forward=false   (ZeRO-2)
--   lrhost show recipes/act_fsdp.lua --gpus 8                                (memory plan per rank)
-- Hybrid sharding (shard within groups, replicate across): recipes/examples/act_hybrid.lua.
local lr = require "lrhost"
local training = require "policy_training"

local cfg = lr.config(training.defaults {
  -- pretrained_backbone_weights "": a random backbone, as in act_ddp.lua.
  policy = lr.policy.defaults("act", { chunk_size = 20, n_action_steps = 1, pretrained_backbone_weights = "" }),
  accelerator = {
    -- mixed_precision = "bf16": gathered parameters in bf16 over fp32 shards.
    -- reshard_after_forward: true = ZeRO-3 (FULL_SHARD), false = ZeRO-2 (SHARD_GRAD_OP).
    -- wrap_modules: "" = the policy's declared units, or e.g. "ACTEncoderLayer,ACTDecoderLayer".
    fsdp = { reshard_after_forward = true, wrap_modules = "" },
  },
  -- dp_shard = -1: one shard group over every rank; dp_shard = 1 would be plain DDP.
  parallelism = { dp_shard = -1, dp_replicate = 1 },
})

training.run(lr, cfg)
