-- DDP benchmark: mean training-step time of the mlp policy (forward, backward with bucketed
-- all-reduce, AdamW) with a fixed per-rank batch, plus the bytes all-reduced per step and how many
-- buckets were launched while backward was still running (overlap evidence). Run it at 1 and at
-- N ranks and compare:
--   lrhost tests/bench/ddp_step.lua --threads 1
--   lrhost --nproc 2 --device cpu tests/bench/ddp_step.lua --threads 1
local lr = require "lrhost"
local cfg = lr.config { batch_size = 32, steps = 50, warmup = 5, width = 1024, depth = 3, seed = 0,
                        accelerator = { ddp = { bucket_cap_mb = 25, first_bucket_mb = 1 } } }
local acc = lr.accelerator(cfg)
lr.manual_seed(cfg.seed)
local hidden = {}
for i = 1, cfg.depth do hidden[i] = cfg.width end
local policy = lr.policy.new { type = "mlp", input_dim = 64, output_dim = 16, hidden_dims = hidden }
local opt = lr.optim.adamw(policy, { lr = 1e-4 })
acc:prepare(policy, opt)
lr.manual_seed(cfg.seed + acc.rank)
local batch = { ["observation.state"] = lr.randn(cfg.batch_size, 64), action = lr.randn(cfg.batch_size, 16) }
local start
for step = 1, cfg.warmup + cfg.steps do
  if step == cfg.warmup + 1 then
    acc:wait_for_everyone()
    start = lr.clock()
  end
  acc:backward((policy:forward(batch)))
  opt:step()
  opt:zero_grad()
end
acc:wait_for_everyone()
local ms = 1000 * (lr.clock() - start) / cfg.steps
local stats = acc:ddp_stats()
acc:on_main(function()
  local line = string.format("ddp step: %d rank(s), %d params, batch %d/rank, threads %d: %.2f ms/step",
                             acc.world_size, policy:num_parameters(), cfg.batch_size, lr.num_threads(), ms)
  if stats then
    line = line .. string.format("; %d buckets, %.2f MB all-reduced/step, %d of %d buckets launched before backward ended",
                                 stats.buckets, stats.bytes_per_step / 2 ^ 20, stats.launched_during_backward, stats.buckets)
  end
  print(line)
end)
