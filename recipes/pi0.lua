-- Trains LeRobot's pi0 vision-language-action policy (PaliGemma VLM + Gemma action expert, ≈ 3.3 B live
-- parameters at full size) data-parallel or sharded on a LeRobot dataset, with the shared loop of
-- recipes/lib/policy_training.lua (LeRobot's AdamW and cosine-decay presets, the schedule shrunk for runs
-- shorter than 30,000 steps, checkpoints LeRobot loads, resume, metrics). docs/policies.md lists every
-- difference from LeRobot; docs/multi_gpu.md walks through memory, sharding and the dtype modes.
--
-- Fine-tune a pretrained pi0 (a folder, or a hub id in the local Hugging Face cache; lrhost never
-- downloads; the PaliGemma tokenizer google/paligemma-3b-pt-224 must be cached too), LeRobot's recipe:
--   lrhost recipes/pi0.lua --gpus 4 policy.pretrained_path=lerobot/pi0_base dataset.repo_id=user/task \
--     batch_size=32 policy.dtype=bfloat16 accelerator.mixed_precision=bf16 policy.gradient_checkpointing=true
-- sharded (FSDP, ZeRO-3) with bf16 compute over fp32 master weights and optimizer state:
--   lrhost recipes/pi0.lua --gpus 4 parallelism.dp_shard=4 policy.pretrained_path=lerobot/pi0_base \
--     dataset.repo_id=user/task accelerator.mixed_precision=bf16 policy.gradient_checkpointing=true
-- The plan (parameters, memory per rank, activations, schedule) without reading any weight:
--   lrhost show recipes/pi0.lua --gpus 4 parallelism.dp_shard=4 policy.pretrained_path=lerobot/pi0_base
-- Out of the box it trains a tiny pi0 from scratch on the built-in pushing task, on CPU, with the
-- geometry and Gemma-style tokenizer shipped in recipes/assets/pi_tiny (named "lrhost/pi_tiny", so no
-- path into this folder is written into the run):
--   lrhost recipes/pi0.lua --nproc 2 --device cpu
-- Every field and its default: `lrhost show recipes/pi0.lua`.
local lr = require "lrhost"
local training = require "policy_training"

local cfg = lr.config(training.defaults {
  -- LeRobot's pi0 defaults with every field listed; the tiny from-scratch model: lrhost's tiny
  -- geometry and tokenizer, 32x32 images, 10-step chunks re-planned every step.
  policy = lr.policy.defaults("pi0", {
    geometry = "lrhost/pi_tiny",    -- "": LeRobot's (So400m + Gemma-2B + Gemma-300M)
    tokenizer_name = "lrhost/pi_tiny",
    pretrained_path = "",           -- a pi0 folder or hub id: fine-tune it (policy.* typed on the command
                                    -- line go on top of its config.json; its geometry comes with it)
    image_resolution = { 32, 32 },
    chunk_size = 10,
    n_action_steps = 1,
    tokenizer_max_length = 16,
    scheduler_warmup_steps = 100,
  }),
  batch_size = 8,
  steps = 300,
  accelerator = {
    -- mixed_precision = "bf16" on a float32 policy: bf16 compute over fp32 master weights and optimizer
    -- state (under FSDP, gathered parameters in bf16 over fp32 shards); with policy.dtype = "bfloat16"
    -- it is LeRobot's own mode (bf16 weights and AdamW state, autocast on top).
    -- reshard_after_forward: true = ZeRO-3 (FULL_SHARD), false = ZeRO-2 (SHARD_GRAD_OP). The units are
    -- the Gemma layers, gathered in (VLM, expert) pairs, and the vision tower.
    fsdp = { reshard_after_forward = true, wrap_modules = "" },
  },
  -- dp_shard = 1: DDP replicas; -1 or the rank count: one FSDP shard group; with dp_replicate: hybrid.
  parallelism = { dp_shard = 1, dp_replicate = 1 },
})

training.run(lr, cfg)
