-- Mixture scale benchmark: open a mixture of `datasets` numeric-only LeRobot datasets written by
-- tests/bench/make_mixture_datasets.py (ROOT/ds000, ROOT/ds001, ...) with the keys state and action,
-- and print the frames, the wall time of lr.dataset.mixture and the process RSS before and after,
-- then the time and RSS of `samples` random reads (the first read of a member loads its rows).
-- Measure the peak from outside as well: /usr/bin/time -v (its "Maximum resident set size").
-- datasets=1 with single=1 opens ROOT/ds000 alone with lr.dataset.lerobot (no mixture).
--   python tests/bench/make_mixture_datasets.py DIR --datasets 100 --frames-per-dataset 100000 --episode-length 500
--   /usr/bin/time -v lrhost tests/bench/mixture_open.lua root=DIR datasets=100
local lr = require "lrhost"
local cfg = lr.config { root = "", datasets = 10, single = 0, samples = 1000 }
assert(cfg.root ~= "", "give root=DIR (the output folder of make_mixture_datasets.py)")
local function rss_mb()
  local rss, hwm
  for line in io.lines("/proc/self/status") do
    rss = rss or tonumber(line:match("^VmRSS:%s+(%d+)"))
    hwm = hwm or tonumber(line:match("^VmHWM:%s+(%d+)"))
  end
  return rss / 1024, hwm / 1024
end
local keys = { "observation.state", "action" }
local before = rss_mb()
local start = lr.clock()
local ds
if cfg.single ~= 0 then
  ds = lr.dataset.lerobot { root = string.format("%s/ds%03d", cfg.root, 0), keys = keys }
else
  local members = {}
  for i = 0, cfg.datasets - 1 do members[#members + 1] = { root = string.format("%s/ds%03d", cfg.root, i) } end
  ds = lr.dataset.mixture { mixture = members, keys = keys }
end
local open_s = lr.clock() - start
local after, peak = rss_mb()
-- A few random reads, to show the opened mixture serves frames.
start = lr.clock()
local n = #ds
local x = 12345
for _ = 1, cfg.samples do
  x = (x * 1103515245 + 12345) % 2147483648
  local sample = ds:get(x % n)
  assert(sample["observation.state"]:size(0) == 14)
end
local get_s = lr.clock() - start
-- A mixture's members load their rows at their first read: the reads above touch every member.
local read, read_peak = rss_mb()
print(string.format("mixture_open datasets=%d frames=%d open_s=%.2f rss_before_mb=%.0f rss_after_mb=%.0f " ..
                    "peak_mb=%.0f open_mb=%.0f mb_per_1e6_frames=%.1f reads_s=%.2f rss_after_reads_mb=%.0f " ..
                    "peak_after_reads_mb=%.0f",
                    cfg.single ~= 0 and 1 or cfg.datasets, n, open_s, before, after, peak, after - before,
                    (after - before) / (n / 1e6), get_s, read, read_peak))
