-- Saves one checkpoint of a tiny mlp into its run folder, says so, then sleeps until a signal stops
-- it: interrupt_resume.sh checks that the interrupted run ends with the `lrhost resume` line.
local lr = require "lrhost"
local sys = require "dist_sys"
local cfg = lr.config { resume = false, output_dir = "" }
local acc = lr.accelerator(cfg)
local policy = lr.policy.new { type = "mlp", input_dim = 2, output_dim = 2, hidden_dims = { 4 } }
local opt = lr.optim.adamw(policy, { lr = 1e-3 })
acc:prepare(policy, opt)
local output_dir = cfg.output_dir ~= "" and cfg.output_dir or lr.run_dir()
local ckpt = lr.checkpoint(output_dir, { acc = acc, policy = policy, optimizer = opt, resume = cfg.resume })
ckpt:save(1)
print(string.format("rank %d ready pid %d", sys.rank(), sys.pid()))
io.stdout:flush()
sys.sleep_forever()
