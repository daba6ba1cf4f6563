-- A frame-weighted mixture (lr.dataset.mixture, no weights) of datasets A, B, ... must equal LeRobot
-- 0.6.1's merge of the same datasets (merge_datasets.py: aggregate_datasets), read by lrhost's
-- reader (lr.dataset.lerobot{root = MERGED}): the interop half run by run_mixture_merge_interop.sh.
--
--   lrhost tests/interop/mixture_merge_check.lua merged=DIR roots=A,B,C
--
-- Checks (error() naming the frame and key on the first mismatch):
--   * frames, episodes, the task table (same strings, same task_index order);
--   * every frame i: the same key set; index, episode_index, frame_index, task_index, timestamp and
--     every numeric feature bit-equal (dtype, shape, values); the task string; every camera: PNG
--     image cameras bit-equal, video cameras within VIDEO_TOLERANCE (below);
--   * the stats: every feature and stat of MERGED/meta/stats.json against the mixture's pooled
--     ds:stats() (tolerances below), and lrhost's reader of the merged stats.json against the file;
--   * with delta_timestamps = { action = { -0.1, 0, 0.1 } } (3 frames at the inputs' 30 fps): action and
--     action_is_pad of every frame.
local lr = require "lrhost"

local cfg = lr.config {
  merged = "",
  roots = "",
}
assert(cfg.merged ~= "", "merged=DIR (LeRobot's merged dataset) is required")
assert(cfg.roots ~= "", "roots=A,B,... (the merged datasets, in merge order) is required")
local roots = {}
for word in tostring(cfg.roots):gmatch("[^,]+") do roots[#roots + 1] = word end
assert(#roots >= 2, "roots= needs at least two datasets")

-- Decoded video: 0 (bit-equal). The merge stream-copies the source mp4s (no re-encode, concat
-- demuxer), so the merged file holds the same AV1 packets and the same decoder must give the same
-- pixels at the shifted timestamps; the existing video interop (run_interop.sh -> compare_items.py)
-- also compares decoded video frames with --camera-tolerance left at its default, 0.
local VIDEO_TOLERANCE = 0
-- Stats: count, min and max must be bit-equal (a sum of integers / an elementwise min or max: no
-- rounding). mean, std and the quantiles (q01..q99, count-weighted means) are sums and quotients in
-- float64 on both sides (LeRobot's aggregate_feature_stats in numpy float64 over the float64 values
-- of each stats.json; lrhost reads those into float64 tensors). Bit-equality is asked for first;
-- STATS_RTOL is the allowance for the same formula evaluated in another order of float64 operations
-- (a few ulps: k * 2^-52 ~ 1e-15 relative for sums of a handful of terms), far below float32
-- rounding (2^-24 ~ 6e-8), so a pool computed in float32 anywhere would still fail. The script
-- reports which of the two held (exact / within tolerance) and the largest relative difference.
local STATS_RTOL = 1e-12

local function fail(fmt, ...) error(string.format(fmt, ...), 0) end
local function show(t)
  local ok, v = pcall(function() return t:tolist() end)
  if not ok then return tostring(t) end
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  local function flat(x)
    if type(x) == "table" then for _, y in ipairs(x) do flat(y) end else parts[#parts + 1] = string.format("%.17g", x) end
  end
  flat(v)
  if #parts > 12 then return "[" .. table.concat(parts, ", ", 1, 12) .. ", ... (" .. #parts .. " values)]" end
  return "[" .. table.concat(parts, ", ") .. "]"
end
local function shape(t) return "[" .. table.concat(t.shape, ",") .. "]" end

local merged = lr.dataset.lerobot { root = cfg.merged }
local parts = {}
for _, r in ipairs(roots) do parts[#parts + 1] = { root = r } end
local mix = lr.dataset.mixture { mixture = parts }
local mmeta, xmeta = merged:meta(), mix:meta()

-- Sizes and the task table.
if #merged ~= #mix then fail("frames: merged %d, mixture %d", #merged, #mix) end
if mmeta.total_frames ~= xmeta.total_frames then
  fail("meta.total_frames: merged %s, mixture %s", tostring(mmeta.total_frames), tostring(xmeta.total_frames))
end
if mmeta.total_episodes ~= xmeta.total_episodes then
  fail("episodes: merged %s, mixture %s", tostring(mmeta.total_episodes), tostring(xmeta.total_episodes))
end
if mmeta.fps ~= xmeta.fps then fail("fps: merged %s, mixture %s", tostring(mmeta.fps), tostring(xmeta.fps)) end
if #mmeta.tasks ~= #xmeta.tasks then fail("tasks: merged %d, mixture %d", #mmeta.tasks, #xmeta.tasks) end
for i = 1, #mmeta.tasks do
  if mmeta.tasks[i] ~= xmeta.tasks[i] then
    fail("task_index %d: merged %q, mixture %q", i - 1, mmeta.tasks[i], xmeta.tasks[i])
  end
  if merged:task(i - 1) ~= mix:task(i - 1) then
    fail("ds:task(%d): merged %q, mixture %q", i - 1, merged:task(i - 1), mix:task(i - 1))
  end
end
-- The mixture's total is the sum of its datasets' (frames and episodes).
local sum_frames, sum_episodes = 0, 0
for _, r in ipairs(roots) do
  local m = lr.dataset.lerobot({ root = r, keys = { "action" } }):meta()
  sum_frames, sum_episodes = sum_frames + m.total_frames, sum_episodes + m.total_episodes
end
if sum_frames ~= #mix or sum_episodes ~= xmeta.total_episodes then
  fail("the inputs hold %d frames in %d episodes, the mixture %d in %d", sum_frames, sum_episodes, #mix,
       xmeta.total_episodes)
end

-- Which keys are cameras, and which of those are video.
local is_video, is_camera = {}, {}
for _, k in ipairs(mmeta.video_keys or {}) do is_video[k] = true end
for _, k in ipairs(mmeta.camera_keys or {}) do is_camera[k] = true end
for k, ft in pairs(mmeta.features) do
  if ft.dtype == "video" then is_video[k], is_camera[k] = true, true end
  if ft.dtype == "image" then is_camera[k] = true end
end

-- compare(i, key, want (merged), got (mixture), tolerance): dtype, shape, then values.
local max_video_diff = 0
local function compare(where, key, want, got, tolerance)
  if want.dtype ~= got.dtype then fail("%s key %s: dtype merged %s, mixture %s", where, key, want.dtype, got.dtype) end
  if shape(want) ~= shape(got) then fail("%s key %s: shape merged %s, mixture %s", where, key, shape(want), shape(got)) end
  if tolerance == 0 or want.dtype == "bool" then
    if not want:equal(got) then fail("%s key %s: merged %s, mixture %s", where, key, show(want), show(got)) end
  else
    local diff = (want:to("float64") - got:to("float64")):abs():max():item()
    if diff > max_video_diff then max_video_diff = diff end
    if diff > tolerance then
      fail("%s key %s: max |diff| %g > %g (merged %s, mixture %s)", where, key, diff, tolerance, show(want), show(got))
    end
  end
end

local counted = { image = 0, video = 0, numeric = 0 }
for i = 0, #merged - 1 do
  local want, got = merged:get(i), mix:get(i)
  local where = string.format("frame %d", i)
  for k in pairs(want) do if got[k] == nil then fail("%s key %s: in the merged item, not the mixture's", where, k) end end
  for k in pairs(got) do if want[k] == nil then fail("%s key %s: in the mixture's item, not the merged", where, k) end end
  if want.index:item() ~= i then fail("%s key index: merged dataset says %s", where, tostring(want.index:item())) end
  for k, w in pairs(want) do
    if is_video[k] then
      compare(where, k, w, got[k], VIDEO_TOLERANCE)
      counted.video = counted.video + 1
    elseif is_camera[k] then
      compare(where, k, w, got[k], 0)
      counted.image = counted.image + 1
    else
      compare(where, k, w, got[k], 0)
      counted.numeric = counted.numeric + 1
    end
  end
  local ti = want.task_index:item()
  if merged:task(ti) ~= mix:task(got.task_index:item()) then
    fail("%s key task: merged %q, mixture %q", where, merged:task(ti), mix:task(got.task_index:item()))
  end
end
if counted.video == 0 then fail("no video camera was compared") end
print(string.format("mixture_merge_check: %d frames, %d episodes, %d tasks equal; %d numeric, %d image, %d video "
                    .. "values compared (video max |diff| %g, tolerance %g)", #merged, mmeta.total_episodes,
                    #mmeta.tasks, counted.numeric, counted.image, counted.video, max_video_diff, VIDEO_TOLERANCE))

-- Stats: the merged stats.json itself (LeRobot's aggregate_stats of the inputs' stats.json) against
-- the mixture's pooled stats; and lrhost's reader of that file against the file (sanity).
local file = lr.read_json(cfg.merged .. "/meta/stats.json")
local pooled, read = mix:stats(), merged:stats()
local function flatten(v, out)
  out = out or {}
  if type(v) == "table" then for _, x in ipairs(v) do flatten(x, out) end else out[#out + 1] = v end
  return out
end
local stats_checked, inexact, max_rel = 0, 0, 0
local features = {}
for f in pairs(file) do features[#features + 1] = f end
table.sort(features)
for _, f in ipairs(features) do
  local names = {}
  for s in pairs(file[f]) do names[#names + 1] = s end
  table.sort(names)
  for _, s in ipairs(names) do
    local where = string.format("stats %s.%s", f, s)
    local want = flatten(file[f][s])
    for label, src in pairs { mixture = pooled, ["merged reader"] = read } do
      if src[f] == nil or src[f][s] == nil then fail("%s: missing from the %s's ds:stats()", where, label) end
      local got = flatten(src[f][s]:to("float64"):tolist())
      if #got ~= #want then fail("%s: %d values in stats.json, %d in the %s's", where, #want, #got, label) end
      for j = 1, #want do
        local w, g = want[j], got[j]
        if w ~= g then
          local rel = math.abs(w - g) / math.max(math.abs(w), 1e-300)
          local exact_only = s == "count" or s == "min" or s == "max" or label == "merged reader"
          if exact_only or rel > STATS_RTOL then
            fail("%s[%d]: stats.json %.17g, %s %.17g (relative %.3g%s)", where, j - 1, w, label, g, rel,
                 exact_only and ", must be exact" or string.format(" > %g", STATS_RTOL))
          end
          inexact = inexact + 1
          if rel > max_rel then max_rel = rel end
        end
      end
    end
    stats_checked = stats_checked + 1
  end
end
print(string.format("mixture_merge_check: %d stats of %d features: %s", stats_checked, #features,
                    inexact == 0 and "all bit-equal"
                      or string.format("%d values within %g (max relative %.3g), the rest bit-equal", inexact,
                                       STATS_RTOL, max_rel)))

-- A delta window (0.1 s before and after: whole frames at the datasets' fps): action and action_is_pad.
local fps = mmeta.fps
local deltas = { action = { -0.1, 0, 0.1 } }
if math.abs(0.1 * fps - math.floor(0.1 * fps + 0.5)) > 1e-9 then fail("window: 0.1 s is no whole frame at %s fps", tostring(fps)) end
local mw = lr.dataset.lerobot { root = cfg.merged, delta_timestamps = deltas, keys = { "action" } }
local xw = lr.dataset.mixture { mixture = parts, delta_timestamps = deltas, keys = { "action" } }
if #mw ~= #xw then fail("window: frames merged %d, mixture %d", #mw, #xw) end
local pads = 0
for i = 0, #mw - 1 do
  local want, got = mw:get(i), xw:get(i)
  local where = string.format("window frame %d", i)
  for _, k in ipairs { "action", "action_is_pad" } do
    if want[k] == nil or got[k] == nil then fail("%s key %s: missing (merged %s, mixture %s)", where, k,
                                                 tostring(want[k] ~= nil), tostring(got[k] ~= nil)) end
    compare(where, k, want[k], got[k], 0)
  end
  pads = pads + want.action_is_pad:to("int64"):sum():item()
end
if pads == 0 then fail("window: no padded position at all (episode edges were not crossed)") end
print(string.format("mixture_merge_check: window action {-0.1, 0, 0.1} s at %s fps: %d frames equal (%d padded "
                    .. "positions)", tostring(fps), #mw, pads))
print("ok: the frame-weighted mixture equals LeRobot's merge")
