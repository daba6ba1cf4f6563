-- Trains LeRobot's Diffusion policy data-parallel (DDP) on a LeRobot dataset: by default lrhost's
-- built-in pushing task (lr.default_dataset(), written on first use). The loop lives in
-- recipes/lib/policy_training.lua: LeRobot's Adam preset with the cosine schedule (500 warmup
-- steps), the DDPM loss logged, checkpoints in LeRobot's layout every save_freq steps and at the
-- end, resume with resume=true, and a held-out evaluation of the predicted action chunks (DDPM
-- sampling; policy.noise_scheduler_type=DDIM policy.num_inference_steps=10 is much faster) against a
-- constant-action baseline.
--   lrhost recipes/diffusion_ddp.lua --nproc 2 --device cpu steps=100   (quick CPU run)
--   lrhost recipes/diffusion_ddp.lua --gpus 4 dataset.root=/data/my_lerobot_dataset
-- The model is LeRobot's default Diffusion policy (horizon 64, 32 action steps, 2 observations,
-- ResNet-18 per camera, U-Net 512-1024-2048) except for the horizon, which fits the built-in
-- task's 10 fps episodes, and the 64x64 camera, which needs no crop.
local lr = require "lrhost"

local cfg = lr.config {
  seed = 1000,
  steps = 2000,
  batch_size = 8,          -- per rank (LeRobot's default)
  num_workers = 2,
  log_freq = 50,
  save_freq = 1000,
  keep_last = 0,
  output_dir = "",
  resume = "auto",        -- false: always start at step 1; true: must resume; "auto": if a checkpoint exists
  eval_episodes = 4,
  eval_batches = 4,        -- every predicted chunk runs num_inference_steps U-Net passes
  min_gain = 0.0,
  dataset = { root = "" },
  -- LeRobot's Diffusion defaults with every field listed, so any is overridable
  -- (policy.down_dims=[128,256]); fields that default to null (crop_shape, resize_shape,
  -- num_inference_steps, ...) are set here when a recipe needs them.
  -- num_inference_steps = 100 is what LeRobot's null means (num_train_timesteps).
  policy = lr.policy.defaults("diffusion", { horizon = 16, n_action_steps = 8, num_inference_steps = 100 }),
  optimizer = { grad_clip_norm = 10.0 },  -- on top of the policy's preset (Adam 1e-4, betas 0.95/0.999, wd 1e-6)
  -- nonfinite: a step with a non-finite loss or gradient norm stops the run ("error") or is dropped
  -- ("skip", at most max_skipped_steps times).
  accelerator = { mixed_precision = "no", gradient_accumulation_steps = 1, nonfinite = "error",
                  max_skipped_steps = 10 },
}

require("policy_training").run(lr, cfg)
