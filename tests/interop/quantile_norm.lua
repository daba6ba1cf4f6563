-- lrhost's half of the quantile_stats interop case: every row of observation.state and action
-- normalized (and unnormalized back) with the dataset's stats in one mode, written as JSON for
-- quantile_stats_check.py to put next to LeRobot's NormalizerProcessorStep.
--
--   lrhost tests/interop/quantile_norm.lua root=DIR out=FILE.json [mode=QUANTILES]
local lr = require "lrhost"

local cfg = lr.config { root = "", out = "", mode = "QUANTILES" }
assert(cfg.root ~= "" and cfg.out ~= "", "root=DIR and out=FILE.json are required")
local ds = lr.dataset.lerobot({ root = cfg.root })
local norm = ds:normalizer({ STATE = cfg.mode, ACTION = cfg.mode })
local keys = { "observation.state", "action" }
local batch = {}
for _, key in ipairs(keys) do batch[key] = ds:column(key) end
local normalized = norm:normalize(batch)
local out = {}
for _, key in ipairs(keys) do
  local t = normalized[key]
  out[key] = { shape = t.shape, values = t:reshape(-1):tolist(),
               inverse = norm:unnormalize(key, t):reshape(-1):tolist() }
end
local file = assert(io.open(cfg.out, "w"))
file:write(lr.config_json(out, -1))
file:close()
print(string.format("quantile_norm mode=%s rows=%d out=%s", cfg.mode, #ds, cfg.out))
