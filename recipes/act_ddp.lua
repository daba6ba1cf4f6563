-- Trains LeRobot's ACT policy data-parallel (DDP) on a LeRobot dataset: by default lrhost's built-in
-- pushing task (lr.default_dataset(), written on first use). The loop lives in
-- recipes/lib/policy_training.lua: LeRobot's AdamW preset (backbone group with its own lr), loss and
-- its parts (l1_loss, kld_loss) logged with phase timings to the log, metrics.jsonl and TensorBoard,
-- checkpoints in LeRobot's layout every save_freq steps and at the end, resume with resume=true, and
-- a held-out evaluation against a constant-action baseline. Every shared field and its default is
-- in policy_training.defaults; `lrhost show recipes/act_ddp.lua` prints them all.
--   lrhost recipes/act_ddp.lua --nproc 2 --device cpu steps=200         (quick CPU run)
--   lrhost recipes/act_ddp.lua --gpus 4 dataset.root=/data/my_lerobot_dataset
--   lrhost recipes/act_ddp.lua --nproc 2 --device cpu output_dir=runs/act resume=true
-- The model is LeRobot's default ACT except for the chunk length, which fits the built-in task's
-- 10 fps episodes, and the number of actions executed per chunk: 1, so the policy re-plans every step
-- (LeRobot's default is chunk_size = n_action_steps = 100). The pushing task needs the feedback:
-- the same trained model succeeds in 2 % of closed-loop episodes executing 20-step chunks open loop
-- and in about 95 % re-planning each step (docs/benchmarks.md, learning bar). Training is the same
-- either way; policy.n_action_steps only changes inference.
local lr = require "lrhost"
local training = require "policy_training"

local cfg = lr.config(training.defaults {
  -- LeRobot's ACT defaults with every field listed, so any is overridable (policy.dim_model=256);
  -- the optimizer preset reads optimizer_lr, optimizer_lr_backbone and optimizer_weight_decay.
  -- pretrained_backbone_weights "" (null): a random ResNet-18, so the recipe runs offline out of the
  -- box; LeRobot's default ResNet18_Weights.IMAGENET1K_V1 (what `lrhost lerobot-train` passes) is read
  -- from the torch hub cache, and a local .safetensors/.pth path works too (docs/policies.md).
  policy = lr.policy.defaults("act", { chunk_size = 20, n_action_steps = 1, pretrained_backbone_weights = "" }),
})

training.run(lr, cfg)
