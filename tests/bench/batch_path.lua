-- Host cost of the training loop's batch path per step, before and after the loader's preprocess
-- option (issue 42 §2): mode=lua is the old loop (loader:next(), then policy:preprocess(batch) from
-- Lua: the batch crosses into Lua twice), mode=loader the shipped one (a loader built with
-- preprocess = policy: the preprocessor runs inside next(), the batch crosses once). The figure is the
-- training thread's time in next() (+ preprocess) less the time next() spent waiting for the worker
-- threads (Loader:stats().wait_s), so decode speed does not enter it: the copy, the camera
-- conversion, the preprocessor and the Lua crossings (the median step). Tiny policies on a synthetic dataset with two
-- 32x32 cameras, as the CPU recipes and tests use them.
--   lrhost tests/bench/batch_path.lua --threads 1 policy=act|smolvla|pi05 mode=lua|loader [batch_size=8]
--          [steps=1000] [warmup=50]
local lr = require "lrhost"
local cfg = lr.config { policy = "act", mode = "loader", batch_size = 8, steps = 1000, warmup = 50, num_workers = 1 }
assert(cfg.mode == "lua" or cfg.mode == "loader", "mode must be lua or loader, got '" .. cfg.mode .. "'")

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local TINY = {
  act = { chunk_size = 4, n_action_steps = 1, dim_model = 32, dim_feedforward = 64, n_heads = 2, n_encoder_layers = 1,
          n_decoder_layers = 1, n_vae_encoder_layers = 1, pretrained_backbone_weights = "" },
  smolvla = { vlm_model_name = here .. "/../../recipes/assets/smolvla_tiny_vlm", chunk_size = 4, n_action_steps = 2,
              num_vlm_layers = 4, resize_imgs_with_padding = { 64, 64 }, tokenizer_max_length = 12,
              pad_language_to = "max_length" },
  pi05 = { geometry = "lrhost/pi_tiny", tokenizer_name = "lrhost/pi_tiny", chunk_size = 4, n_action_steps = 2,
           image_resolution = { 32, 32 }, tokenizer_max_length = 24, max_state_dim = 8, max_action_dim = 8,
           empty_cameras = 1 },
}
local tiny = TINY[cfg.policy] or error("policy must be act, smolvla or pi05, got '" .. cfg.policy .. "'")

local root = (os.getenv("TMPDIR") or "/tmp") .. "/lrhost-bench-batch-path"
if not io.open(root .. "/meta/info.json") then
  lr.dataset.synth { out = root, episodes = 20, images = true, wrist = true, image_size = 32, max_length = 40, seed = 1 }
end
local plain = lr.dataset.lerobot { root = root }
lr.manual_seed(0)
local policy = lr.policy.new(lr.policy.defaults(cfg.policy, tiny), plain)
local ds = lr.dataset.lerobot { root = root, delta_timestamps = policy:delta_timestamps(plain:meta().fps) }
local options = { batch_size = cfg.batch_size, seed = 0, num_workers = cfg.num_workers }
if cfg.mode == "loader" then options.preprocess = policy end
local loader = ds:loader(options)

local function next_batch()
  local batch = loader:next()
  if cfg.mode == "lua" then batch = policy:preprocess(batch) end
  return batch
end
for _ = 1, cfg.warmup do next_batch() end
local wait0 = loader:stats().wait_s
local times = {}
for i = 1, cfg.steps do
  local w = loader:stats().wait_s
  local t = lr.clock()
  next_batch()
  times[i] = lr.clock() - t - (loader:stats().wait_s - w)
end
table.sort(times)
local total = 0
for _, spent in ipairs(times) do total = total + spent end
-- The median: on a small machine the worker threads share the cores, and their decode bursts land
-- in a few steps' figures.
print(string.format("lrhost batch path: policy %s, mode %s, batch %d, threads %d: median %.3f ms/step on the training "
                    .. "thread (mean %.3f, fastest %.3f; %d steps after %d warm-up; worker wait %.3f ms/step excluded)",
                    cfg.policy, cfg.mode, cfg.batch_size, lr.num_threads(), 1000 * times[math.ceil(#times / 2)],
                    1000 * total / #times, 1000 * times[1], cfg.steps, cfg.warmup,
                    1000 * (loader:stats().wait_s - wait0) / cfg.steps))
