-- A recipe that requires a module from its own folder (module_recipe_helper.lua) and checkpoints
-- with keep_last = 1: module_resume.sh resumes it with `lrhost resume` after both files are gone,
-- twice, so the second resume starts from a checkpoint written by a resumed run.
local lr = require "lrhost"
local helper = require "module_recipe_helper"
local cfg = lr.config { steps = 4, save_freq = 2, keep_last = 1, resume = "auto", output_dir = "", seed = 3 }
local acc = lr.accelerator(cfg)
local policy, opt, loader = helper.build(lr, acc, cfg)
local ckpt = lr.checkpoint(cfg.output_dir, { policy = policy, optimizer = opt, loader = loader, acc = acc,
                                             resume = cfg.resume, keep_last = cfg.keep_last })
for step, batch in loader:steps(ckpt:resume() + 1, cfg.steps) do
  helper.train_step(acc, policy, opt, batch)
  if step % cfg.save_freq == 0 then ckpt:save(step) end
end
print("module_recipe finished at step " .. cfg.steps .. " with helper " .. helper.version)
