-- DDP equivalence: after `steps` optimizer steps, N ranks x micro-batch b (x `accum` micro-steps)
-- give the same parameters as one process stepping on the whole global batch N*b*accum, with
-- AdamW and (optionally) gradient clipping. Every rank trains through the accelerator; rank 0
-- also trains the single-process reference in-process and compares (fp32, rtol 1e-5).
local lr = require "lrhost"
local cfg = lr.config { global_batch = 12, steps = 4, accum = 1, clip = 0.0, seed = 7,
                        mixed_precision = "no", tolerance = 1e-5 }
local acc = lr.accelerator {
                             accelerator = { gradient_accumulation_steps = cfg.accum,
                                             mixed_precision = cfg.mixed_precision,
                                             ddp = { first_bucket_mb = 0.0005, bucket_cap_mb = 0.001 } } }
local n, r = acc.world_size, acc.rank
local per_step = cfg.global_batch
assert(per_step % (n * cfg.accum) == 0, "global_batch must divide by ranks x accum")
local b = per_step / (n * cfg.accum)

lr.manual_seed(123)
local X = lr.randn(cfg.steps * per_step, 5)
local Y = lr.randn(cfg.steps * per_step, 3)
local policy_cfg = { type = "mlp", input_dim = 5, output_dim = 3, hidden_dims = { 16, 16 }, input_key = "x", target_key = "y" }
local opt_cfg = { lr = 1e-2, weight_decay = 0.1 }

-- Distributed run: micro-step m of rank r takes rows [step*G + (m*n + r)*b, +b).
lr.manual_seed(cfg.seed + r)  -- deliberately different per rank: prepare must broadcast rank 0's init
local policy = lr.policy.new(policy_cfg)
if r == 0 then
  lr.manual_seed(cfg.seed)
  policy = lr.policy.new(policy_cfg)
end
local opt = lr.optim.adamw(policy, opt_cfg)
acc:prepare(policy, opt)
for step = 0, cfg.steps - 1 do
  for micro = 0, cfg.accum - 1 do
    local first = step * per_step + (micro * n + r) * b
    local loss = policy:forward(acc:to_device { x = X:narrow(0, first, b), y = Y:narrow(0, first, b) })
    acc:backward(loss)
    if cfg.clip > 0 then acc:clip_grad_norm(cfg.clip) end
    local stepped = opt:step()
    assert(stepped == (micro == cfg.accum - 1), "optimizer steps only at the accumulation boundary")
    opt:zero_grad()
  end
end

-- Reference on rank 0: one process, the whole global batch per step.
if r == 0 then
  lr.manual_seed(cfg.seed)
  local ref = lr.policy.new(policy_cfg)
  local ref_opt = lr.optim.adamw(ref, opt_cfg)
  for step = 0, cfg.steps - 1 do
    local first = step * per_step
    local loss = ref:forward { x = X:narrow(0, first, per_step), y = Y:narrow(0, first, per_step) }
    loss:backward()
    if cfg.clip > 0 then ref_opt:clip_grad_norm(cfg.clip) end
    ref_opt:step()
    ref_opt:zero_grad()
  end
  local got, want = policy:named_parameters(), ref:named_parameters()
  local worst = 0
  for name, p in pairs(want) do
    local diff = (got[name]:cpu() - p):abs():max():item() / (p:abs():max():item() + 1e-12)
    worst = math.max(worst, diff)
    if diff > cfg.tolerance then
      error(string.format("%s differs from the single-process reference: relative max diff %.3g > %.1g", name, diff,
                          cfg.tolerance))
    end
  end
  print(string.format("ddp equivalence ok: %d ranks x %d rows x %d accum, %d steps, worst relative diff %.3g",
                      n, b, cfg.accum, cfg.steps, worst))
end
local stats = acc:ddp_stats()
if stats then
  assert(stats.buckets > 1, "tiny bucket caps give several buckets")
  assert(stats.synced_steps == cfg.steps, "one synchronised backward per optimizer step")
  assert(stats.launched_during_backward >= 1, "buckets are launched while backward runs")
end
acc:wait_for_everyone()
