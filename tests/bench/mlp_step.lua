-- Per-step host overhead benchmark, lrhost side: the mlp policy trained on random data with AdamW,
-- gradient clipping and a cosine schedule; prints the mean ms/step over `steps` timed steps after
-- `warmup` untimed ones. Its twin is mlp_step.py (same model, loop and data in Python PyTorch).
--   lrhost tests/bench/mlp_step.lua --threads 1 batch_size=16
local lr = require "lrhost"
local cfg = lr.config { batch_size = 16, steps = 2000, warmup = 200, input_dim = 8, output_dim = 2,
                        hidden_dims = { 128, 128 }, seed = 0 }
lr.manual_seed(cfg.seed)
local n = 8192
local data = { ["observation.state"] = lr.randn(n, cfg.input_dim), action = lr.randn(n, cfg.output_dim) }
local policy = lr.policy.new { type = "mlp", input_dim = cfg.input_dim, output_dim = cfg.output_dim,
                               hidden_dims = cfg.hidden_dims, activation = "gelu" }
local opt = lr.optim.adamw(policy, { lr = 1e-3, weight_decay = 1e-4 })
local sched = lr.optim.scheduler(opt, { type = "cosine_with_warmup", warmup_steps = 10,
                                        total_steps = cfg.steps + cfg.warmup })
local order = lr.randperm(n)
local start
for step = 1, cfg.warmup + cfg.steps do
  if step == cfg.warmup + 1 then start = lr.clock() end
  local offset = ((step - 1) * cfg.batch_size) % (n - cfg.batch_size)
  local idx = order:narrow(0, offset, cfg.batch_size)
  local batch = { ["observation.state"] = data["observation.state"]:index_select(0, idx),
                  action = data.action:index_select(0, idx) }
  local loss = policy:forward(batch)
  loss:backward()
  opt:clip_grad_norm(1.0)
  opt:step()
  opt:zero_grad()
  sched:step()
end
local elapsed = lr.clock() - start
print(string.format("lrhost mlp step: batch %d, threads %d: %.4f ms/step", cfg.batch_size, lr.num_threads(),
                    1000 * elapsed / cfg.steps))
