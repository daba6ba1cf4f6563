-- Data loader benchmark, lrhost side: samples/s of the C++ loader (LeRobot's sampler, `num_workers`
-- threads decoding video and assembling batches) after `warmup` batches, plus the loader's own
-- held memory and the process RSS at the end. Its twin is lerobot_loader.py (LeRobot's Python loader
-- on the same dataset). With num_workers=1 and only the camera key this measures decode throughput.
-- With vlm=DIR (a SmolVLM folder with tokenizer.json, e.g. recipes/assets/smolvla_tiny_vlm) each
-- timed batch also goes through what a SmolVLA training loop does per batch before the forward:
-- policy:preprocess(batch) of a SmolVLA policy built on the dataset (lr.policy.new with the VLM, its
-- 4 layers, tokenizer_max_length=max_length, pad_language_to; the dataset's tasks are tokenized once
-- when the policy is built, so per batch the tokens are rows of that table by `task_index`, plus the
-- normalizer over state, action and cameras). Its peer is lerobot_loader.py --smolvla-vlm DIR.
--   lrhost tests/bench/loader_throughput.lua root=DIR batch_size=64 num_workers=2 steps=30
--   lrhost tests/bench/loader_throughput.lua root=DIR batch_size=8 vlm=recipes/assets/smolvla_tiny_vlm
local lr = require "lrhost"
local cfg = lr.config { root = "", batch_size = 64, num_workers = 2, prefetch = 4, steps = 30, warmup = 3,
                        keys = "", action_horizon = 0, threads = 1,
                        vlm = "", max_length = 48, pad_language_to = "max_length" }
local root = cfg.root ~= "" and cfg.root or lr.default_dataset()
local keys = nil
if cfg.keys ~= "" then
  keys = {}
  for key in cfg.keys:gmatch("[^,]+") do keys[#keys + 1] = key end
end
local deltas = nil
if cfg.action_horizon > 0 then
  local seconds = {}
  local fps = lr.dataset.lerobot({ root = root, keys = {} }):meta().fps
  for k = 0, cfg.action_horizon - 1 do seconds[#seconds + 1] = k / fps end
  deltas = { action = seconds }
end
local ds = lr.dataset.lerobot { root = root, keys = keys, delta_timestamps = deltas }
local policy = nil
if cfg.vlm ~= "" then
  policy = lr.policy.new(lr.policy.defaults("smolvla", {
    vlm_model_name = cfg.vlm, num_vlm_layers = 4, tokenizer_max_length = cfg.max_length,
    pad_language_to = cfg.pad_language_to }), ds)
  assert(policy:needs_task(), "the SmolVLA policy should tokenize the task")
end
local function release_all(batch)
  for _, tensor in pairs(batch) do if type(tensor) ~= "table" and not tensor:is_released() then tensor:release() end end
end
local tokens_shape = "none"
local loader = ds:loader { batch_size = cfg.batch_size, num_workers = cfg.num_workers, prefetch = cfg.prefetch, seed = 0 }
local start
for step, batch in loader:steps(1, cfg.warmup + cfg.steps) do
  if step == cfg.warmup then start = lr.clock() end
  if policy then
    local processed = policy:preprocess(batch)
    local t = processed["observation.language.tokens"]
    tokens_shape = string.format("%dx%d", t:size(0), t:size(1))
    release_all(processed)
  end
  release_all(batch)
end
local elapsed = lr.clock() - start
local function rss_mb()
  for line in io.lines("/proc/self/status") do
    local kb = line:match("^VmRSS:%s+(%d+)")
    if kb then return tonumber(kb) / 1024 end
  end
end
local stats = loader:stats()
print(string.format("lrhost_loader samples_per_s=%.1f batch=%d workers=%d frames=%d cameras=%d " ..
                    "loader_peak_mb=%.1f rss_mb=%.0f wait_s=%.2f language_tokens=%s",
                    cfg.steps * cfg.batch_size / elapsed, cfg.batch_size, cfg.num_workers, #ds,
                    #ds:meta().camera_keys, stats.peak_resident_bytes / 2 ^ 20, rss_mb(), stats.wait_s, tokens_shape))
