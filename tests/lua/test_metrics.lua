-- Metrics from a recipe: acc:log into lr.metrics.jsonl sinks (values reduced, one JSON object per
-- logged step, flushed, resumable), the training meter's phase timings and progress, the shared
-- policy recipe defaults (policy_training.defaults), and the errors a recipe author meets.
local lr = require "lrhost"
local t = require "testlib"

local work = os.tmpname()
os.remove(work)
os.execute("mkdir -p '" .. work .. "'")

local function read_lines(path)
  local lines = {}
  for line in io.lines(path) do lines[#lines + 1] = line end
  return lines
end

-- acc:log writes every sink; the meter adds its timings and the progress
do
  local acc = lr.accelerator { batch_size = 4 }
  local path = work .. "/run/metrics.jsonl"
  acc:add_metrics_sink(lr.metrics.jsonl(path))
  local meter = acc:training_meter { total_steps = 3, first_step = 1, samples_per_step = 4 }
  for step = 1, 3 do
    meter:mark("data")
    meter:mark("forward")
    meter:end_step(step)
    local logged = acc:log(step, { loss = lr.tensor(0.5 * step), ["eval/custom"] = step }, meter)
    t.eq(logged.loss, 0.5 * step, "acc:log returns the reduced metrics")
    t.truthy(logged.step_s >= logged.data_s and logged.samples_per_s > 0, "the meter's window is in the record")
  end
  local lines = read_lines(path)
  t.eq(#lines, 3, "one line per logged step")
  t.truthy(lines[1]:find('^{"step":1,"time":%d+%.?%d*,'), "step and wall time first: " .. lines[1])
  t.truthy(lines[3]:find('"loss":1.5', 1, true) and lines[3]:find('"eval/custom":3', 1, true), lines[3])
  t.truthy(lines[3]:find('"forward_s":', 1, true) and lines[3]:find('"peak_rss_gib":', 1, true), lines[3])
  t.truthy(meter:progress(3):find("step 3/3 (100.0%)", 1, true), meter:progress(3))
  acc:log_text("config", 1, { steps = 3 })  -- no text sink here: a no-op, not an error

  -- a resumed run (first_step = 3) replaces what the earlier run logged from step 3 on
  local resumed = lr.accelerator { batch_size = 4 }
  resumed:add_metrics_sink(lr.metrics.jsonl(path, { first_step = 3 }))
  resumed:log(3, { loss = 9 })
  lines = read_lines(path)
  t.eq(#lines, 3, "step 3 is not duplicated")
  t.truthy(lines[3]:find('"loss":9', 1, true), "the resumed run's step 3: " .. lines[3])
end

-- errors name what is wrong
do
  local acc = lr.accelerator { batch_size = 4 }
  t.raises(function() lr.metrics.jsonl(work .. "/x.jsonl", { first = 2 }) end, "lr.metrics.jsonl: unknown option 'first'")
  t.raises(function() lr.metrics.jsonl(work .. "/x.jsonl", { first_step = 0 }) end, "lr.metrics.jsonl: 'first_step' must be a positive integer, got 0")
  t.raises(function() acc:training_meter { total_steps = 0 } end,
           "acc:training_meter: 'total_steps' must be a positive integer, got 0")
  t.raises(function() acc:training_meter { total_steps = 5, every = 2 } end, "acc:training_meter: unknown option 'every'")
  t.raises(function() acc:training_meter {} end, "acc:training_meter: 'total_steps' is required")
  t.raises(function() acc:eval_progress { episodes = 2.5 } end, "acc:eval_progress: 'episodes' must be an integer, got 2.5")
  t.raises(function() acc:eval_progress { episodes = 2, log_lines = "yes" } end,
           "acc:eval_progress: 'log_lines' must be true or false")
  t.raises(function() acc:eval_progress { episods = 2 } end, "acc:eval_progress: 'episodes' is required")
  t.truthy(acc:eval_progress { episodes = 2, log_lines = true } ~= nil, "eval_progress with both options")
  t.raises(function() acc:add_metrics_sink({}) end, "expected MetricsSink")
  local meter = acc:training_meter { total_steps = 5 }
  meter:mark("data")
  meter:end_step(1)
  t.raises(function() acc:log(1, { data_s = 1 }, meter) end, "metric 'data_s' is also one of the meter's")
  acc:add_metrics_sink(lr.metrics.jsonl(work .. "/reserved.jsonl"))
  t.raises(function() acc:log(1, { time = 1 }) end, "metric name 'time' is reserved")
end

-- policy_training.defaults: a variant gives what differs; tables merge, lists and values replace
do
  local training = require "policy_training"
  local cfg = training.defaults { steps = 10, policy = { type = "act", list = { 3 } },
                                  accelerator = { mixed_precision = "bf16" } }
  t.eq(cfg.steps, 10, "a changed value")
  t.eq(cfg.batch_size, 8, "a shared default")
  t.eq(cfg.accelerator.mixed_precision, "bf16", "a changed nested field")
  t.eq(cfg.accelerator.nonfinite, "error", "the other nested fields stay")
  t.eq(cfg.policy.list, { 3 }, "lists replace")
  local again = training.defaults { policy = { type = "act" } }
  t.eq(again.accelerator.mixed_precision, "no", "defaults are copied, never shared between variants")
  t.raises(function() training.defaults { steps = 3 } end, "give the policy")
  t.raises(function() training.defaults(5) end, "expected a table of fields, got number")
end

-- the success rate's 95 % interval (Wilson): exact ends at 0 and n successes, textbook values between
do
  local wilson = require("closed_loop_eval").wilson_interval
  local none, half, all = wilson(0, 10), wilson(5, 10), wilson(10, 10)
  t.eq(none[1], 0, "0/10: the interval starts at 0")
  t.near(none[2], 0.27753, 1e-4, "0/10 upper bound")
  t.near(half[1], 0.23659, 1e-4, "5/10 lower bound")
  t.near(half[2], 0.76341, 1e-4, "5/10 upper bound")
  t.eq(all[2], 1, "10/10: the interval ends at 1")
end

os.execute("rm -rf '" .. work .. "'")
t.done()
