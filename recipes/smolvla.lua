-- Trains LeRobot's SmolVLA vision-language-action policy data-parallel on a LeRobot dataset, with the
-- shared loop of recipes/lib/policy_training.lua (LeRobot's AdamW and cosine-decay presets, the
-- schedule shrunk for runs shorter than 30,000 steps, checkpoints LeRobot loads, resume, metrics).
--
-- Fine-tune a pretrained SmolVLA, as LeRobot's multi-GPU guide does (the folder or hub id must be in
-- the local Hugging Face cache; lrhost never downloads), with the dataset's cameras mapped onto the
-- policy's by rename_map when their names differ (or the same with lerobot-train's flags, through
-- `lrhost lerobot-train`: docs/lerobot.md):
--   lrhost recipes/smolvla.lua --gpus 4 policy.pretrained_path=lerobot/smolvla_base dataset.repo_id=user/so100_task \
--     batch_size=12 rename_map='{"observation.images.top": "observation.images.camera1"}'
-- Out of the box it trains a small SmolVLA from scratch on the built-in pushing task, on CPU, with
-- the tiny VLM shipped in recipes/assets/smolvla_tiny_vlm (config and tokenizer, random weights),
-- named "lrhost/smolvla_tiny_vlm" so that no path into this folder is written into the run (a copied
-- recipe, a resumed run and a moved clone all find it):
--   lrhost recipes/smolvla.lua --nproc 2 --device cpu
-- Every field and its default: `lrhost show recipes/smolvla.lua`.
local lr = require "lrhost"
local training = require "policy_training"

local cfg = lr.config(training.defaults {
  -- LeRobot's SmolVLA defaults with every field listed (policy.chunk_size=50 etc. override them);
  -- the small from-scratch model: the tiny VLM, 64x64 images, 10-step chunks re-planned every step.
  policy = lr.policy.defaults("smolvla", {
    vlm_model_name = "lrhost/smolvla_tiny_vlm",
    pretrained_path = "",           -- a SmolVLA folder or hub id: fine-tune it (policy.* typed on the
                                    -- command line go on top of its config.json)
    resize_imgs_with_padding = { 64, 64 },
    chunk_size = 10,
    n_action_steps = 1,
    num_vlm_layers = 4,
    tokenizer_max_length = 16,
    scheduler_warmup_steps = 100,
  }),
  batch_size = 8,
  steps = 300,
})

training.run(lr, cfg)
