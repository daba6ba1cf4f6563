-- Compares two safetensors files tensor by tensor (preempt.sh: the final weights of a preempted and
-- resumed run against an uninterrupted run's): same names, and every tensor's relative max
-- difference within `tolerance` (0: bit for bit).
local lr = require "lrhost"
local cfg = lr.config { a = "", b = "", tolerance = 0.0 }
local a, b = lr.load_safetensors(cfg.a), lr.load_safetensors(cfg.b)
local count, worst = 0, 0
for name, want in pairs(a) do
  local got = assert(b[name], name .. " is missing from " .. cfg.b)
  local diff = (got - want):abs():max():item() / (want:abs():max():item() + 1e-30)
  if cfg.tolerance == 0 and not got:equal(want) then error(name .. " differs (bit for bit expected)") end
  if diff > cfg.tolerance then error(string.format("%s differs: relative max diff %.3g > %.3g", name, diff, cfg.tolerance)) end
  worst = math.max(worst, diff)
  count = count + 1
end
for name in pairs(b) do assert(a[name], name .. " is missing from " .. cfg.a) end
assert(count > 0, "nothing to compare")
print(string.format("weights match: %d tensors, worst relative diff %.3g", count, worst))
