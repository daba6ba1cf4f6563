-- Under FSDP, rank 1 skips a training step that rank 0 runs (a rank-divergent bug): rank 0 waits in
-- the first unit's all-gather and must fail with a "timed out" error naming the collective after
-- --timeout seconds instead of hanging; rank 1 waits in a sleep loop until the launcher stops it.
local lr = require "lrhost"
local acc = lr.accelerator { parallelism = { dp_shard = -1 } }
local policy = lr.policy.new { type = "mlp", input_dim = 4, output_dim = 2, hidden_dims = { 8 }, input_key = "x",
                               target_key = "y" }
local opt = lr.optim.adamw(policy, { lr = 1e-3 })
acc:prepare(policy, opt)
if acc.rank == 0 then
  acc:backward(policy:forward { x = lr.randn(3, 4), y = lr.randn(3, 2) })
else
  os.execute("sleep 60")
end
