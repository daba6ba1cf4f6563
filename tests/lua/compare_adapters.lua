-- Two adapter files (adapter_model.safetensors) of the same training under different strategies:
-- the same names and shapes, values within `tol` (absolute).
--   lrhost tests/lua/compare_adapters.lua a=FILE b=FILE tol=X
local lr = require "lrhost"
local cfg = lr.config { a = "", b = "", tol = 0.0 }
local a, b = lr.load_safetensors(cfg.a), lr.load_safetensors(cfg.b)
local worst, count = 0, 0
for name, t in pairs(a) do
  assert(b[name], name .. " is only in " .. cfg.a)
  assert(t:numel() == b[name]:numel(), name .. ": the shapes differ")
  local d = (t - b[name]):abs():max():item()
  assert(d <= cfg.tol, string.format("%s: max |diff| %.3g > %.3g", name, d, cfg.tol))
  worst, count = math.max(worst, d), count + 1
end
for name in pairs(b) do assert(a[name], name .. " is only in " .. cfg.b) end
print(string.format("adapters equal: %d tensors, max |diff| %.3g <= %.3g", count, worst, cfg.tol))
