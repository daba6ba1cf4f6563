-- The accelerator's divergence guard in one process: a step whose loss or gradient norm is not
-- finite stops the run by default with an error naming the step, the metric and its value, and the
-- last good checkpoint, and the parameters are never updated; accelerator.nonfinite = "skip" drops
-- such steps (counted, gradients cleared, schedule not advanced) up to max_skipped_steps, then
-- stops the same way; fp16 overflow skips stay the loss scaler's and are not divergence; a loop that
-- saves every step leaves no checkpoint after the diverged step; the recipe library never calls a
-- worse or non-finite policy "better".
local lr = require "lrhost"
local t = require "testlib"

local NAN = 0 / 0

local function make_policy()
  lr.manual_seed(3)
  return lr.policy.new { type = "mlp", input_dim = 4, output_dim = 2, hidden_dims = { 8 } }
end
local function batch(n)
  return { ["observation.state"] = lr.randn(n, 4), action = lr.randn(n, 2) }
end
-- A NaN loss whose gradients are finite: only the guard's poisoning can spread it.
local function planted_nan(policy) return policy:forward(batch(4)) + NAN end
-- A finite loss whose gradients are NaN (d sqrt(u)/du at u = 0 is inf, times du/dw = 0).
local function nan_gradients(policy)
  local w = policy:named_parameters()["layers.0.weight"]
  return policy:forward(batch(4)) + (w - w:detach()):abs():sum():sqrt()
end
local function snapshot(policy)
  local copy = {}
  for name, p in pairs(policy:named_parameters()) do copy[name] = p:clone() end
  return copy
end
local function unchanged(policy, before)
  for name, p in pairs(policy:named_parameters()) do
    if not p:equal(before[name]) then return false end
  end
  return true
end
local function setup(accelerator, optimizer)
  local acc = lr.accelerator(accelerator and { accelerator = accelerator } or nil)
  local policy = make_policy()
  local opt = (optimizer or lr.optim.adamw)(policy, { lr = 1e-2 })
  acc:prepare(policy, opt)
  return acc, policy, opt
end

-- Default: error naming the step, the metric with its value and the last good checkpoint; the
-- update is not applied.
do
  local acc, policy, opt = setup()
  t.eq(acc.nonfinite, "error", "default policy")
  t.eq(acc.max_skipped_steps, 10, "default bound")
  acc:guard_context { next_step = 5, checkpoint = "/runs/x/checkpoints/000004" }
  acc:backward(policy:forward(batch(4)))
  t.truthy(acc:clip_grad_norm(1.0) < math.huge, "finite step: finite norm")
  t.eq(opt:step(), true, "step 5 is finite and taken")
  opt:zero_grad()
  local before = snapshot(policy)
  acc:backward(planted_nan(policy))
  acc:clip_grad_norm(1.0)
  t.raises(function() opt:step() end, "training diverged at step 6: the loss is nan on rank 0", "loss")
  t.raises(function() opt:step() end, "last good checkpoint: /runs/x/checkpoints/000004", "checkpoint named")
  t.truthy(unchanged(policy, before), "the diverged step did not update the parameters")
end

-- Without clip_grad_norm the guard computes the norm itself; steps count from 1 without context.
do
  local acc, policy, opt = setup(nil, lr.optim.sgd)
  acc:backward(policy:forward(batch(4)))
  t.eq(opt:step(), true, "step 1 taken")
  opt:zero_grad()
  local before = snapshot(policy)
  acc:backward(nan_gradients(policy))
  t.raises(function() opt:step() end, "training diverged at step 2: the gradient norm is nan. The update was not applied",
           "gradient norm")
  t.raises(function() opt:step() end, "no checkpoint of this run was reported", "no checkpoint known")
  t.truthy(unchanged(policy, before), "no update from NaN gradients")
end

-- Skip mode: the step is dropped (params unchanged, gradients cleared, schedule not advanced) and
-- counted; the bound is then exceeded with the same clear error.
do
  local acc, policy, opt = setup { nonfinite = "skip", max_skipped_steps = 2 }
  local sched = lr.optim.scheduler(opt, { type = "constant", total_steps = 10 })
  t.eq(acc.nonfinite, "skip", "skip policy")
  local before = snapshot(policy)
  acc:backward(planted_nan(policy))
  local norm = acc:clip_grad_norm(1.0)
  t.eq(norm ~= norm, true, "the norm of the poisoned gradients is NaN")
  t.eq(opt:step(), false, "non-finite step skipped")
  sched:step()
  t.eq(sched:last_step(), 0, "the schedule does not advance on a skipped step")
  t.eq(policy:named_parameters()["layers.0.weight"].grad, nil, "gradients cleared")
  t.truthy(unchanged(policy, before), "parameters unchanged after a skipped step")
  t.eq(acc:skipped_nonfinite_steps(), 1, "skip counted")
  t.eq(acc:skipped_steps(), 0, "not an fp16 loss-scale skip")
  acc:backward(policy:forward(batch(4)))
  t.eq(opt:step(), true, "a finite step after a skip is taken")
  sched:step()
  t.eq(sched:last_step(), 1, "and the schedule advances")
  t.eq(unchanged(policy, before), false, "and updates the parameters")
  opt:zero_grad()
  acc:backward(nan_gradients(policy))
  t.eq(opt:step(), false, "second non-finite step skipped")
  t.eq(acc:skipped_nonfinite_steps(), 2, "two skips counted")
  acc:backward(planted_nan(policy))
  t.raises(function() opt:step() end,
           "training diverged at step 4: the loss is nan on rank 0, the 3 non-finite steps so far are more than "
             .. "accelerator.max_skipped_steps = 2 allows", "bound exceeded")
  t.eq(acc:skipped_nonfinite_steps(), 2, "the step over the bound is not counted as skipped")
end

-- max_skipped_steps = 0 in skip mode: the first non-finite step already stops the run.
do
  local acc, policy, opt = setup { nonfinite = "skip", max_skipped_steps = 0 }
  acc:backward(planted_nan(policy))
  t.raises(function() opt:step() end, "more than accelerator.max_skipped_steps = 0 allows", "bound 0")
end

-- Gradient accumulation: a NaN in any micro-step fails the whole optimizer step, numbered once.
do
  local acc, policy, opt = setup { gradient_accumulation_steps = 2, nonfinite = "skip" }
  local before = snapshot(policy)
  acc:backward(planted_nan(policy))
  t.eq(opt:step(), false, "mid-cycle: no step anyway")
  opt:zero_grad()
  acc:backward(policy:forward(batch(4)))
  t.eq(opt:step(), false, "the cycle with a NaN micro-step is skipped")
  t.eq(acc:skipped_nonfinite_steps(), 1, "one skipped optimizer step")
  t.truthy(unchanged(policy, before), "no update")
  opt:zero_grad()
  for _ = 1, 2 do
    acc:backward(policy:forward(batch(4)))
    opt:step()
    opt:zero_grad()
  end
  t.eq(unchanged(policy, before), false, "the next clean cycle steps")
end

-- fp16: gradient overflow is the loss scaler's normal skip (no error, not counted as divergence);
-- a non-finite loss is divergence (error) and leaves the loss scale alone.
do
  local acc, policy, opt = setup { mixed_precision = "fp16" }
  acc:backward(policy:forward(batch(4)) * 1e38)  -- a finite loss that x 65536 overflows
  t.eq(opt:step(), false, "fp16 overflow skipped")
  opt:zero_grad()
  t.eq(acc:skipped_steps(), 1, "counted by the scaler")
  t.eq(acc:skipped_nonfinite_steps(), 0, "not counted as divergence")
  t.eq(acc:loss_scale(), 32768, "scale halved")
  acc:backward(planted_nan(policy))
  t.raises(function() opt:step() end, "training diverged at step 2: the loss is nan on rank 0", "fp16 NaN loss")
  t.eq(acc:loss_scale(), 32768, "a NaN loss does not touch the loss scale")
  t.eq(acc:skipped_steps(), 1, "nor the scaler's count")
end

-- A loop that saves every step: the diverged step stops it before ckpt:save, so the last
-- checkpoint on disk is the last finite step's, and the error names it.
do
  local work = os.tmpname()
  os.remove(work)
  local acc, policy, opt = setup()
  local ckpt = lr.checkpoint(work, { acc = acc, policy = policy, optimizer = opt })
  acc:guard_context { next_step = 1 }
  local ok, err = pcall(function()
    for step = 1, 5 do
      local loss = step == 3 and planted_nan(policy) or policy:forward(batch(4))
      acc:backward(loss)
      acc:clip_grad_norm(1.0)
      opt:step()
      opt:zero_grad()
      acc:guard_context { checkpoint = ckpt:save(step) }
    end
  end)
  t.eq(ok, false, "the loop stopped")
  t.truthy(tostring(err):find("training diverged at step 3: the loss is nan on rank 0", 1, true), "step 3: " .. tostring(err))
  t.truthy(tostring(err):find("last good checkpoint: " .. work .. "/checkpoints/000002", 1, true),
           "names checkpoint 2: " .. tostring(err))
  t.eq(ckpt:last_dir(), work .. "/checkpoints/000002", "nothing saved after the diverged step")
  os.execute("rm -rf '" .. work .. "'")
end

-- Bad options and arguments.
t.raises(function() lr.accelerator { accelerator = { nonfinite = "ignore" } } end,
         "'nonfinite' must be one of 'error', 'skip'")
t.raises(function() lr.accelerator { accelerator = { max_skipped_steps = -1 } } end,
         "'accelerator.max_skipped_steps' must be >= 0, got -1")
do
  local acc = lr.accelerator {}
  t.raises(function() acc:guard_context { step = 3 } end, "acc:guard_context: unknown option 'step'")
  t.raises(function() acc:guard_context { next_step = 0 } end, "acc:guard_context: 'next_step' must be >= 1, got 0")
  t.raises(function() acc:guard_context { checkpoint = 4 } end, "acc:guard_context: 'checkpoint' must be a string, got 4")
  t.raises(function() acc:guard_context(3) end, "bad argument #1 to 'Accelerator:guard_context'")
end

-- The recipe library's evaluation line: "better" only when the policy's MSE is lower.
do
  local versus = require("policy_training").versus_baseline
  t.eq(versus(0.1, 0.4), "(4.00x better)", "better")
  t.eq(versus(0.4, 0.1), "(4.00x worse)", "worse, never 'better'")
  t.eq(versus(0.2, 0.2), "(no better than the baseline)", "equal")
  t.eq(versus(NAN, 0.4), "(not comparable: non-finite MSE)", "NaN policy MSE")
  t.eq(versus(math.huge, 0.4), "(not comparable: non-finite MSE)", "infinite policy MSE")
end
t.done()
