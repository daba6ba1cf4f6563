-- Loader throughput of a mixture against one dataset: samples/s of ds:loader (all keys: state, action
-- and both cameras of `lrhost dataset synth --wrist`) over `steps` batches after `warmup`, and the RSS.
-- video_cache is the loader's open video files per worker (0: its default, max(8, the dataset's video
-- streams); a mixture of 10 two-camera datasets has 20). datasets=N > 0 opens ROOT/m000 .. ROOT/m(N-1) as lr.dataset.mixture;
-- datasets=0 opens ROOT alone.
--   for i in 0..9: lrhost dataset synth --out DIR/m00$i --episodes 6 --wrist --seed $((i*6))
--   lrhost dataset synth --out DIR/single --episodes 60 --wrist --seed 0
--   lrhost tests/bench/mixture_loader.lua --threads 1 root=DIR datasets=10
--   lrhost tests/bench/mixture_loader.lua --threads 1 root=DIR/single datasets=0
--   (add video_cache=24 to both: every camera file of the mixture stays open)
local lr = require "lrhost"
local cfg = lr.config { root = "", datasets = 10, batch_size = 8, num_workers = 2, prefetch = 4, steps = 300,
                        warmup = 5, seed = 0, video_cache = 0 }  -- 0: the loader's default
assert(cfg.root ~= "", "give root=DIR")
local ds
if cfg.datasets > 0 then
  local members = {}
  for i = 0, cfg.datasets - 1 do members[#members + 1] = { root = string.format("%s/m%03d", cfg.root, i) } end
  ds = lr.dataset.mixture { mixture = members }
else
  ds = lr.dataset.lerobot { root = cfg.root }
end
local function release_all(batch)
  for _, tensor in pairs(batch) do if type(tensor) ~= "table" and not tensor:is_released() then tensor:release() end end
end
local loader = ds:loader { batch_size = cfg.batch_size, num_workers = cfg.num_workers, prefetch = cfg.prefetch,
                           seed = cfg.seed, video_cache = cfg.video_cache > 0 and cfg.video_cache or nil }
local start
for step, batch in loader:steps(1, cfg.warmup + cfg.steps) do
  if step == cfg.warmup then start = lr.clock() end
  release_all(batch)
end
local elapsed = lr.clock() - start
local rss
for line in io.lines("/proc/self/status") do rss = rss or tonumber(line:match("^VmRSS:%s+(%d+)")) end
print(string.format("mixture_loader datasets=%d frames=%d cameras=%d samples_per_s=%.1f batch=%d workers=%d " ..
                    "steps=%d video_cache=%s wait_s=%.2f rss_mb=%.0f", cfg.datasets, #ds, #ds:meta().camera_keys,
                    cfg.steps * cfg.batch_size / elapsed, cfg.batch_size, cfg.num_workers, cfg.steps, cfg.video_cache > 0 and cfg.video_cache or "default",
                    loader:stats().wait_s, rss / 1024))
