-- Trains NVIDIA's GR00T N1.7 vision-language-action policy (a Qwen3-VL backbone cut to 16 layers and a
-- flow-matching DiT action head, 3.1 B parameters at full size) data-parallel or sharded on a LeRobot
-- dataset, with the shared loop of recipes/lib/policy_training.lua (LeRobot's AdamW and diffusers-cosine
-- presets, checkpoints LeRobot loads, resume, metrics). docs/policies.md lists every difference from
-- LeRobot; docs/multi_gpu.md walks through memory and sharding.
--
-- Fine-tune the base checkpoint on a new robot, as LeRobot's GR00T guide does (base_model_path a
-- folder or a hub id in the local Hugging Face cache, and nvidia/Cosmos-Reason2-2B's tokenizer cached
-- too; lrhost never downloads), the action head trained, the backbone frozen:
--   lrhost recipes/groot.lua --gpus 4 policy.base_model_path=nvidia/GR00T-N1.7-3B dataset.repo_id=user/task \
--     policy.geometry= policy.tokenizer_name=nvidia/Cosmos-Reason2-2B batch_size=32 steps=20000
-- sharded (FSDP, ZeRO-3: the frozen backbone sharded too):
--   ... parallelism.dp_shard=4
-- The plan (parameters, memory per rank) without reading any weight:
--   lrhost show recipes/groot.lua --gpus 4 parallelism.dp_shard=4 policy.geometry= policy.base_model_path=...
-- Out of the box it trains a tiny GR00T from scratch on the built-in pushing task, on CPU, with the
-- geometry, tokenizer and image processor shipped in recipes/assets/groot_tiny (named "lrhost/groot_tiny"):
--   lrhost recipes/groot.lua --nproc 2 --device cpu
-- Every field and its default: `lrhost show recipes/groot.lua`.
local lr = require "lrhost"
local training = require "policy_training"

local cfg = lr.config(training.defaults {
  -- LeRobot's GrootConfig defaults with every field listed; the tiny from-scratch model: lrhost's tiny
  -- geometry and tokenizer, 32x32 images (cropped to 28, resized back), 8-step chunks.
  policy = lr.policy.defaults("groot", {
    geometry = "lrhost/groot_tiny",  -- "": base_model_path's config.json + Cosmos-Reason2-2B (LeRobot's)
    tokenizer_name = "lrhost/groot_tiny",
    pretrained_path = "",            -- a LeRobot GR00T folder or hub id: fine-tune it
    chunk_size = 8,
    n_action_steps = 8,
    max_state_dim = 16,
    max_action_dim = 16,
    use_bf16 = false,                -- LeRobot's default true runs CPU autocast too; fp32 on CPU here
    max_steps = 300,                 -- LeRobot's warmup is ceil(max_steps * warmup_ratio)
  }),
  batch_size = 8,
  steps = 300,
  accelerator = {
    -- reshard_after_forward: true = ZeRO-3 (FULL_SHARD), false = ZeRO-2. The units are the Qwen3-VL
    -- vision blocks and text layers and the vl_self_attention and DiT blocks.
    fsdp = { reshard_after_forward = true, wrap_modules = "" },
  },
  -- dp_shard = 1: DDP replicas; -1 or the rank count: one FSDP shard group; with dp_replicate: hybrid.
  parallelism = { dp_shard = 1, dp_replicate = 1 },
})

training.run(lr, cfg)
