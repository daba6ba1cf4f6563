-- The EMA weights of two runs of the same training under different strategies (a = FSDP, b = DDP),
-- each with a checkpoint at every step 1..steps. Their live weights differ by the order of the
-- gradient reductions; the EMA is a convex combination of the initial weights (the same in both) and
-- the live weights of each step, so per tensor T
--   max |ema_a - ema_b|_T <= max_k max |live_a,k - live_b,k|_T + 2 x steps x eps32 x max_k max |live|_T
-- (the second term: each update's two roundings, a subtraction and a multiply-subtract, per step).
--   lrhost tests/lua/compare_ema.lua a=RUN b=RUN steps=N
local lr = require "lrhost"
local cfg = lr.config { a = "", b = "", steps = 1 }
local eps32 = 2 ^ -23
local function load(run, step, folder)
  return lr.load_safetensors(string.format("%s/checkpoints/%06d/%s/model.safetensors", run, step, folder))
end
local live_diff, live_max = {}, {}
for step = 1, cfg.steps do
  local a, b = load(cfg.a, step, "pretrained_model"), load(cfg.b, step, "pretrained_model")
  for name, t in pairs(a) do
    assert(b[name], name .. " is only in run a")
    live_diff[name] = math.max(live_diff[name] or 0, (t - b[name]):abs():max():item())
    live_max[name] = math.max(live_max[name] or 0, t:abs():max():item())
  end
end
local a, b = load(cfg.a, cfg.steps, "pretrained_model_ema"), load(cfg.b, cfg.steps, "pretrained_model_ema")
local count, worst_ratio = 0, 0
for name, t in pairs(a) do
  assert(b[name], name .. " is only in run a's EMA folder")
  local bound = live_diff[name] + 2 * cfg.steps * eps32 * live_max[name]
  local d = (t - b[name]):abs():max():item()
  assert(d <= bound, string.format("%s: EMA max |diff| %.3g > %.3g (live weights up to %.3g apart)", name, d, bound,
                                   live_diff[name]))
  if bound > 0 then worst_ratio = math.max(worst_ratio, d / bound) end
  count = count + 1
end
print(string.format("EMA weights within the live weights' differences: %d tensors, at most %.2f of the bound", count,
                    worst_ratio))
