-- Trains the `mlp` policy with data parallelism: every rank draws its own batches of the same
-- synthetic regression task (recipes/lib/synthetic_regression.lua), the accelerator averages gradients across
-- ranks (DDP), and the main process logs metrics reduced over all ranks.
--   lrhost recipes/examples/mlp_ddp.lua --nproc 2 --device cpu
--   lrhost show recipes/examples/mlp_ddp.lua --gpus 4   (the config planned for 4 ranks, scaled lr)
local lr = require "lrhost"
local scaling = require "scaling"

local cfg = lr.config({
  seed = 0,
  steps = 1000,
  batch_size = 32,            -- per rank
  log_freq = 100,
  train_samples = 8192,
  eval_samples = 2048,
  input_dim = 8,
  output_dim = 2,
  noise = 0.01,
  target_mse = 0.005,
  scale_lr = "sqrt",          -- "none" | "linear" | "sqrt": explicit rule for the effective batch
  reference_batch = 32,       -- the batch size optimizer.lr was tuned for
  policy = { type = "mlp", hidden_dims = { 128, 128 }, activation = "gelu" },
  optimizer = { lr = 3e-3, weight_decay = 1e-4, grad_clip_norm = 1.0 },
  scheduler = { type = "cosine_with_warmup", warmup_steps = 50 },
  -- nonfinite: a step with a non-finite loss or gradient norm stops the run ("error") or is dropped
  -- ("skip", at most max_skipped_steps times).
  accelerator = { mixed_precision = "no", gradient_accumulation_steps = 1, nonfinite = "error",
                  max_skipped_steps = 10 },
}, function(cfg, plan)
  -- Explicit, opt-in lr scaling for the effective batch (batch_size x ranks x accumulation).
  cfg.base_lr = cfg.optimizer.lr
  cfg.optimizer.lr = scaling.lr_for(cfg.scale_lr, cfg.optimizer.lr, cfg.reference_batch, plan.effective_batch)
end)

local acc = lr.accelerator(cfg)

-- The task is identical on every rank (same seed); batches differ per rank.
lr.manual_seed(cfg.seed)
local task = require("synthetic_regression").new(lr, cfg)
local train, held_out = task:split(cfg.train_samples), task:split(cfg.eval_samples)

lr.log.info(string.format("lr %.3g (%s rule from %.3g at batch %d; effective batch %d)", cfg.optimizer.lr,
                          cfg.scale_lr, cfg.base_lr, cfg.reference_batch, acc.effective_batch))

local policy_cfg = cfg.policy
policy_cfg.input_dim, policy_cfg.output_dim = cfg.input_dim, cfg.output_dim
local policy = lr.policy.new(policy_cfg)
local opt = lr.optim.adamw(policy, cfg.optimizer)
local sched_cfg = cfg.scheduler
sched_cfg.total_steps = cfg.steps
local sched = lr.optim.scheduler(opt, sched_cfg)
policy, opt = acc:prepare(policy, opt)

-- Each rank shuffles with its own generator offset so ranks see different samples.
lr.manual_seed(cfg.seed + 1000 * (acc.rank + 1))
local order, cursor = lr.randperm(cfg.train_samples), 0
local micro_steps = cfg.steps * acc.gradient_accumulation_steps
local window_start = lr.clock()
for micro = 1, micro_steps do
  if cursor + cfg.batch_size > cfg.train_samples then order, cursor = lr.randperm(cfg.train_samples), 0 end
  local idx = order:narrow(0, cursor, cfg.batch_size)
  cursor = cursor + cfg.batch_size
  local batch = acc:to_device { ["observation.state"] = train["observation.state"]:index_select(0, idx),
                                action = train.action:index_select(0, idx) }
  local loss = policy:forward(batch)
  acc:backward(loss)
  acc:clip_grad_norm(cfg.optimizer.grad_clip_norm)
  opt:step()
  opt:zero_grad()
  sched:step()
  local step = micro / acc.gradient_accumulation_steps
  if acc.sync_gradients and (step % cfg.log_freq == 0 or step == cfg.steps) then
    local now = lr.clock()
    acc:log(step, { loss = loss, lr = opt:lr(), step_time = (now - window_start) / cfg.log_freq,
                    ["samples/s"] = cfg.log_freq * cfg.batch_size * acc.gradient_accumulation_steps / (now - window_start) })
    window_start = now
  end
end

policy:eval()
local eval_mse = lr.no_grad(function()
  local _, parts = policy:forward(acc:to_device(held_out))
  return parts.mse_loss:item()
end)
acc:on_main(function()
  lr.log.info(string.format("held-out mse %.6g (target %.5f)", eval_mse, cfg.target_mse))
end)
-- Written so that NaN (a diverged run) fails: every comparison with NaN is false.
if not (eval_mse <= cfg.target_mse) then
  error(string.format("held-out mse %.5f is above the target %.5f", eval_mse, cfg.target_mse))
end
