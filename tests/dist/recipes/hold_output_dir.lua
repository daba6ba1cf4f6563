-- Opens a checkpoint manager on output_dir (which locks the folder), says so, sleeps `hold` seconds
-- (forever when < 0) and then saves one checkpoint of a tiny mlp (save=false: none; resume=auto
-- accepts the folder's earlier checkpoints): run_folder.sh's output_lock case starts a second job on
-- the same output_dir meanwhile.
local lr = require "lrhost"
local sys = require "dist_sys"
local cfg = lr.config { output_dir = "", hold = 0.0, save = true, resume = "false" }
local acc = lr.accelerator(cfg)
local policy = lr.policy.new { type = "mlp", input_dim = 2, output_dim = 2, hidden_dims = { 4 } }
local opt = lr.optim.adamw(policy, { lr = 1e-3 })
acc:prepare(policy, opt)
local resume = cfg.resume ~= "false" and cfg.resume  -- "auto" or "false" (lr.config keys keep one type)
local ckpt = lr.checkpoint(cfg.output_dir, { acc = acc, policy = policy, optimizer = opt, resume = resume })
print(string.format("rank %d ready pid %d", sys.rank(), sys.pid()))
io.stdout:flush()
if cfg.hold < 0 then sys.sleep_forever() end
sys.sleep(cfg.hold)
if cfg.save then ckpt:save(1) end
