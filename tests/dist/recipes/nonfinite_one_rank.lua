-- Only rank 1's loss is NaN (a finite-gradient NaN: nothing but the divergence guard can tell the
-- other ranks), yet every rank must reach the same verdict on the same step:
--   1. DDP, accelerator.nonfinite = "skip": both ranks skip step 2, count one skip, and keep
--      identical parameters (no rank applies an update the other refused), and step 3 is taken;
--   2. FSDP without clip_grad_norm (the guard reduces the norm itself), "skip": the same;
--   3. DDP, default "error": both ranks raise the divergence error at step 3; each catches it, the
--      ranks compare step and message (a collective both can only reach if both stopped), and
--      then fail with it, so the job fails with the clear error instead of hanging.
-- Rank 0 prints each verdict before the next collective, so its lines are out (lrhost's stdout is
-- line-buffered, util/output_buffering.hpp) before rank 1 can exit, whichever rank ends first.
local lr = require "lrhost"

local function batch() return { x = lr.randn(3, 4), y = lr.randn(3, 2) } end
local function loss_of(policy, acc, step, bad_step)
  local loss = policy:forward(acc:to_device(batch()))
  if acc.rank == 1 and step == bad_step then loss = loss + 0 / 0 end
  return loss
end
local function checksum(policy)
  local sum = 0
  for _, p in pairs(policy:named_parameters()) do sum = sum + p:double():abs():sum():item() end
  return sum
end
local function text_hash(s)
  local h = 0
  for i = 1, #s do h = (h * 31 + s:byte(i)) % 1000003 end
  return h
end
local function new_policy()
  lr.manual_seed(5)
  return lr.policy.new { type = "mlp", input_dim = 4, output_dim = 2, hidden_dims = { 8 }, input_key = "x",
                         target_key = "y" }
end

-- 1 and 2: skip mode agrees across ranks.
for _, parallel in ipairs { { name = "ddp", dp_shard = 1, clip = true }, { name = "fsdp", dp_shard = -1, clip = false } } do
  local acc = lr.accelerator { accelerator = { nonfinite = "skip", max_skipped_steps = 1 },
                               parallelism = { dp_shard = parallel.dp_shard } }
  local policy = new_policy()
  local opt = lr.optim.adamw(policy, { lr = 1e-2 })
  acc:prepare(policy, opt)
  lr.manual_seed(100 + acc.rank)
  local taken = {}
  for step = 1, 3 do
    acc:backward(loss_of(policy, acc, step, 2))
    if parallel.clip then acc:clip_grad_norm(1.0) end
    taken[step] = opt:step() and 1 or 0
    opt:zero_grad()
  end
  local steps = acc:gather(lr.tensor({ taken[1], taken[2], taken[3], acc:skipped_nonfinite_steps() },
                                     { dtype = "float64" }))
  local sums = acc:gather(checksum(policy))
  acc:on_main(function()
    local all = steps:tolist()
    local want = { 1, 0, 1, 1, 1, 0, 1, 1 }
    for i = 1, #want do
      if all[i] ~= want[i] then
        error(string.format("%s: taken steps and skip counts per rank should be %s, got %s", parallel.name,
                            table.concat(want, ","), table.concat(all, ",")))
      end
    end
    -- (FSDP ranks hold different shards, so only DDP's full copies can be compared.)
    if parallel.name == "ddp" and sums[1] ~= sums[2] then error(string.format("%s: parameters differ across ranks: %.17g vs %.17g", parallel.name,
                                                  sums[1], sums[2])) end
    print(string.format("%s skip: both ranks skipped step 2 and agree", parallel.name))
  end)
end

-- 3: the default error, on both ranks at the same step.
local acc = lr.accelerator {}
local policy = new_policy()
local opt = lr.optim.adamw(policy, { lr = 1e-2 })
acc:prepare(policy, opt)
acc:guard_context { next_step = 1 }
lr.manual_seed(200 + acc.rank)
local stopped_at, message = -1, ""
local ok, err = pcall(function()
  for step = 1, 5 do
    stopped_at = step
    acc:backward(loss_of(policy, acc, step, 3))
    acc:clip_grad_norm(1.0)
    opt:step()
    opt:zero_grad()
  end
end)
if not ok then message = tostring(err):match("training diverged.*") or tostring(err) end
local seen = acc:gather(lr.tensor({ ok and 1 or 0, stopped_at, text_hash(message) }, { dtype = "float64" })):tolist()
if seen[1] ~= 0 or seen[4] ~= 0 or seen[2] ~= seen[5] or seen[3] ~= seen[6] then
  error("the ranks disagree: (finished, step, message hash) = " .. table.concat(seen, ","))
end
acc:on_main(function() print("both ranks stopped at step " .. seen[2] .. " with the same error") end)
-- Neither rank fails before rank 0 has printed that line: whichever exits first makes the launcher
-- stop the other with SIGTERM, and rank 1 must not be the one to win that race before the print.
acc:gather(lr.tensor({ 1 }, { dtype = "float64" }))
error(message, 0)
