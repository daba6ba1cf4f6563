-- Trains LeRobot's Diffusion policy data-parallel (DDP) on a LeRobot dataset: by default lrhost's
-- built-in pushing task (lr.default_dataset(), written on first use). The loop and the shared
-- defaults live in recipes/lib/policy_training.lua: LeRobot's Adam preset with the cosine schedule
-- (500 warmup steps), the DDPM loss logged, checkpoints in LeRobot's layout, resume with
-- resume=true, and a held-out evaluation of the predicted action chunks (DDPM sampling;
-- policy.noise_scheduler_type=DDIM policy.num_inference_steps=10 is much faster) against a
-- constant-action baseline.
--   lrhost recipes/diffusion_ddp.lua --nproc 2 --device cpu steps=100   (quick CPU run)
--   lrhost recipes/diffusion_ddp.lua --gpus 4 dataset.root=/data/my_lerobot_dataset
-- The model is LeRobot's default Diffusion policy (horizon 64, 32 action steps, 2 observations,
-- ResNet-18 per camera, U-Net 512-1024-2048) except for the horizon, which fits the built-in
-- task's 10 fps episodes, and the 64x64 camera, which needs no crop.
local lr = require "lrhost"
local training = require "policy_training"

local cfg = lr.config(training.defaults {
  eval_batches = 4,        -- every predicted chunk runs num_inference_steps U-Net passes
  -- LeRobot's Diffusion defaults with every field listed, so any is overridable
  -- (policy.down_dims=[128,256]); fields that default to null (crop_shape, resize_shape,
  -- num_inference_steps, ...) are set here when a recipe needs them.
  -- num_inference_steps = 100 is what LeRobot's null means (num_train_timesteps).
  -- pretrained_backbone_weights "": a random backbone, as in act_ddp.lua.
  policy = lr.policy.defaults("diffusion", { horizon = 16, n_action_steps = 8, num_inference_steps = 100,
                                             pretrained_backbone_weights = "" }),
})

training.run(lr, cfg)
