-- Trains LeRobot's ACT policy data-parallel (DDP) on a LeRobot dataset: by default lrhost's built-in
-- pushing task (lr.default_dataset(), written on first use). The loop lives in
-- recipes/lib/policy_training.lua: LeRobot's AdamW preset (backbone group with its own lr), loss and
-- its parts (l1_loss, kld_loss) logged, checkpoints in LeRobot's layout every save_freq steps and at
-- the end, resume with resume=true, and a held-out evaluation against a constant-action baseline.
--   lrhost recipes/act_ddp.lua --nproc 2 --device cpu steps=200         (quick CPU run)
--   lrhost recipes/act_ddp.lua --gpus 4 dataset.root=/data/my_lerobot_dataset
--   lrhost recipes/act_ddp.lua --nproc 2 --device cpu output_dir=runs/act resume=true
-- The model is LeRobot's default ACT except for the chunk length, which fits the built-in task's
-- 10 fps, ~8 s episodes (LeRobot's default is chunk_size = n_action_steps = 100).
local lr = require "lrhost"

local cfg = lr.config {
  seed = 1000,
  steps = 2000,
  batch_size = 8,          -- per rank (LeRobot's default)
  num_workers = 2,         -- loader threads per rank
  log_freq = 50,
  save_freq = 1000,        -- 0: only at the end
  keep_last = 0,           -- 0 keeps every checkpoint
  output_dir = "",         -- "": the run folder (outputs/lrhost/<time>_act_ddp)
  resume = "auto",        -- false: always start at step 1; true: must resume; "auto": if a checkpoint exists
  eval_episodes = 4,       -- the last episodes are held out
  eval_batches = 32,
  min_gain = 0.0,          -- fail unless baseline MSE / policy MSE reaches this (0: report only)
  dataset = { root = "" }, -- "": the built-in task
  -- LeRobot's ACT defaults with every field listed, so any is overridable (policy.dim_model=256);
  -- the optimizer preset reads optimizer_lr, optimizer_lr_backbone and optimizer_weight_decay.
  policy = lr.policy.defaults("act", { chunk_size = 20, n_action_steps = 20 }),
  optimizer = { grad_clip_norm = 10.0 },  -- on top of the policy's preset (AdamW, lr = policy.optimizer_lr)
  -- nonfinite: a step with a non-finite loss or gradient norm stops the run ("error") or is dropped
  -- ("skip", at most max_skipped_steps times).
  accelerator = { mixed_precision = "no", gradient_accumulation_steps = 1, nonfinite = "error",
                  max_skipped_steps = 10 },
}

require("policy_training").run(lr, cfg)
