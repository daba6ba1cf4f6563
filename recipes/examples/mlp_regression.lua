-- Trains the `mlp` policy on a synthetic regression task in one process (inputs x ~ N(0, I),
-- targets y = sin(x A) B + noise; see recipes/lib/synthetic_regression.lua). Logs step, loss, lr
-- and steps/s; evaluates on held-out samples at the end and fails if the held-out MSE is above
-- `target_mse` (documented in docs/quickstart.md).
--   lrhost recipes/examples/mlp_regression.lua steps=3000 optimizer.lr=3e-3
local lr = require "lrhost"

local cfg = lr.config {
  seed = 0,
  steps = 2000,
  batch_size = 64,
  log_freq = 200,
  train_samples = 8192,
  eval_samples = 2048,
  input_dim = 8,
  output_dim = 2,
  noise = 0.01,
  target_mse = 0.005,  -- held-out MSE to reach: ~1% of the target variance (~0.43); noise floor 1e-4
  policy = { type = "mlp", hidden_dims = { 128, 128 }, activation = "gelu" },
  optimizer = { lr = 3e-3, weight_decay = 1e-4, grad_clip_norm = 1.0 },
  scheduler = { type = "cosine_with_warmup", warmup_steps = 100 },
}

lr.manual_seed(cfg.seed)

-- The task is a fixed random nonlinear map (recipes/lib/synthetic_regression.lua), sampled once;
-- batches are index_select'ed in C++.
local task = require("synthetic_regression").new(lr, cfg)
local train, held_out = task:split(cfg.train_samples), task:split(cfg.eval_samples)

local policy_cfg = cfg.policy
policy_cfg.input_dim, policy_cfg.output_dim = cfg.input_dim, cfg.output_dim
local policy = lr.policy.new(policy_cfg)
local opt = lr.optim.adamw(policy, cfg.optimizer)
local sched_cfg = cfg.scheduler
sched_cfg.total_steps = cfg.steps
local sched = lr.optim.scheduler(opt, sched_cfg)
lr.log.info(string.format("mlp: %d parameters, %d steps of batch %d", policy:num_parameters(), cfg.steps,
                          cfg.batch_size))

local function batch_at(split, indices)
  return { ["observation.state"] = split["observation.state"]:index_select(0, indices),
           action = split.action:index_select(0, indices) }
end

local order, cursor = lr.randperm(cfg.train_samples), 0
local window_start, window_steps = lr.clock(), 0
for step = 1, cfg.steps do
  if cursor + cfg.batch_size > cfg.train_samples then
    order, cursor = lr.randperm(cfg.train_samples), 0
  end
  local batch = batch_at(train, order:narrow(0, cursor, cfg.batch_size))
  cursor = cursor + cfg.batch_size

  local loss = policy:forward(batch)
  loss:backward()
  opt:clip_grad_norm(cfg.optimizer.grad_clip_norm)
  opt:step()
  opt:zero_grad()
  sched:step()
  window_steps = window_steps + 1

  if step % cfg.log_freq == 0 or step == cfg.steps then
    local now = lr.clock()
    lr.log_step(step, { loss = loss:item(), lr = opt:lr(), ["steps/s"] = window_steps / (now - window_start) })
    window_start, window_steps = now, 0
  end
end

policy:eval()
local eval_mse = lr.no_grad(function()
  local _, parts = policy:forward(held_out)
  return parts.mse_loss:item()
end)
lr.log.info(string.format("held-out mse %.5f (target %.5f)", eval_mse, cfg.target_mse))
-- Written so that NaN (a diverged run) fails: every comparison with NaN is false.
if not (eval_mse <= cfg.target_mse) then
  error(string.format("held-out mse %.5f is above the target %.5f", eval_mse, cfg.target_mse))
end
