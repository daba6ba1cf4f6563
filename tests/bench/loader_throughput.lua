-- Data loader benchmark, lrhost side: samples/s of the C++ loader (LeRobot's sampler, `num_workers`
-- threads decoding video and assembling batches) after `warmup` batches, plus the loader's own
-- held memory and the process RSS at the end. Its twin is lerobot_loader.py (LeRobot's Python loader
-- on the same dataset). With num_workers=1 and only the camera key this measures decode throughput.
--   lrhost tests/bench/loader_throughput.lua root=DIR batch_size=64 num_workers=2 steps=30
local lr = require "lrhost"
local cfg = lr.config { root = "", batch_size = 64, num_workers = 2, prefetch = 4, steps = 30, warmup = 3,
                        keys = "", action_horizon = 0, threads = 1 }
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
local loader = ds:loader { batch_size = cfg.batch_size, num_workers = cfg.num_workers, prefetch = cfg.prefetch, seed = 0 }
local start
for step, batch in loader:steps(1, cfg.warmup + cfg.steps) do
  if step == cfg.warmup then start = lr.clock() end
  for _, tensor in pairs(batch) do tensor:release() end
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
                    "loader_peak_mb=%.1f rss_mb=%.0f wait_s=%.2f",
                    cfg.steps * cfg.batch_size / elapsed, cfg.batch_size, cfg.num_workers, #ds,
                    #ds:meta().camera_keys, stats.peak_resident_bytes / 2 ^ 20, rss_mb(), stats.wait_s))
