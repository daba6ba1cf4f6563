-- Collectives through the accelerator against hand-computed results, at any world size (run with
-- --nproc 1..4). Also checks that a collective inside acc:on_main raises instead of hanging.
local lr = require "lrhost"
local cfg = lr.config { batch_size = 2 }
local acc = lr.accelerator(cfg)
local n, r = acc.world_size, acc.rank

local function check(ok, what) if not ok then error(what .. " (rank " .. r .. ")", 2) end end
local function near(a, b) return math.abs(a - b) < 1e-9 end

-- numbers
check(near(acc:all_reduce(r + 1), n * (n + 1) / 2), "all_reduce sum of rank+1")
check(near(acc:all_reduce(r + 1, "max"), n), "all_reduce max")
check(near(acc:all_reduce(r + 1, "min"), 1), "all_reduce min")
check(near(acc:all_reduce(r + 1, "mean"), (n + 1) / 2), "all_reduce mean")
check(near(acc:broadcast(10 * r + 7, n - 1), 10 * (n - 1) + 7), "broadcast from the last rank")
local gathered = acc:gather(r * r)
check(#gathered == n, "gather length")
for i = 1, n do check(near(gathered[i], (i - 1) ^ 2), "gather value " .. i) end

-- tensors (in place, returned)
local t = acc:to_device(lr.tensor({ r, 2 * r }))
acc:all_reduce(t)
check(near(t:get(0), n * (n - 1) / 2) and near(t:get(1), n * (n - 1)), "tensor all_reduce")
local g = acc:gather(acc:to_device(lr.full({ 2, 3 }, r)))
check(g.shape[1] == 2 * n and g.shape[2] == 3, "tensor gather shape")
check(near(g:get(2 * n - 1, 2), n - 1), "tensor gather order is rank order")
local trimmed = acc:gather_for_metrics(acc:to_device(lr.full({ 2 }, r)), 2 * n - 1)
check(trimmed.shape[1] == 2 * n - 1, "gather_for_metrics drops padding")
acc:wait_for_everyone()

-- metric reduction: mean by default, max for times (*_s, *_time) and memory (*_gib), sum for rates
-- (*_per_s, */s) and counts (*_count)
local m = acc:reduce_metrics { loss = r, step_time = r, ["samples/s"] = 10, step_s = r + 1, samples_per_s = r,
                                frames_count = 1, peak_rss_gib = 2 * r }
check(near(m.loss, (n - 1) / 2) and near(m.step_time, n - 1) and near(m["samples/s"], 10 * n), "reduce_metrics")
check(near(m.step_s, n), "step_s is the slowest rank's, got " .. m.step_s)
check(near(m.samples_per_s, n * (n - 1) / 2) and near(m.frames_count, n), "rates and counts add up")
check(near(m.peak_rss_gib, 2 * (n - 1)), "memory is the fullest rank's")

-- acc:log with a meter: the meter's timings join the metrics and are reduced too (every rank calls it)
local meter = acc:training_meter { total_steps = 4, first_step = 1, samples_per_step = 2 }
meter:mark("data")
meter:end_step(1)
local logged = acc:log(1, { loss = r }, meter)
check(near(logged.loss, (n - 1) / 2) and logged.step_s ~= nil and logged.data_s ~= nil and logged.samples_per_s > 0,
      "acc:log merges the meter's window")

-- on_main: runs on the main process only; a collective inside raises there, others are not blocked
local ran = acc:on_main(function() return "ran" end)
check((ran == "ran") == acc.is_main_process, "on_main runs on main only")
local ok, err = pcall(function() acc:on_main(function() acc:all_reduce(1) end) end)
if acc.is_main_process then
  check(not ok and tostring(err):find("main-process-only block", 1, true), "collective inside on_main raises")
else
  check(ok, "non-main ranks skip the block")
end
acc:wait_for_everyone()
check(acc.effective_batch == 2 * n, "effective batch = batch_size x ranks")
print(string.format("rank %d/%d: collectives ok", r, n))
