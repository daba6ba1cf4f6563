-- A background checkpoint writer that fails mid-run must fail the whole job with its cause: the
-- shared training loop (recipes/lib/policy_training.lua) on a tiny ACT with save_async = true.
-- After the first checkpoint is complete, rank 0 replaces checkpoints/last with a non-empty folder,
-- so the next save's writer (in the background, while training goes on) cannot move `last`; the
-- save after it, or the end of the run (steps = 4: that save is the last), must then raise that
-- failure on every rank.
local lr = require "lrhost"
local training = require "policy_training"
local cfg = lr.config(training.defaults {
  policy = lr.policy.defaults("act", { chunk_size = 10, n_action_steps = 1, dim_model = 32, dim_feedforward = 64,
                                       n_heads = 2, n_encoder_layers = 1, n_decoder_layers = 1,
                                       n_vae_encoder_layers = 1 }),
  steps = 8, batch_size = 4, num_workers = 1, save_freq = 2, log_freq = 2, eval_batches = 1, save_async = true,
})

local save = training.save
local broken = false
training.save = function(run, step)
  save(run, step)
  if broken or step % cfg.save_freq ~= 0 then return end
  run.ckpt:wait()  -- this first checkpoint is complete; the ones after it are not
  local dir = run.ckpt:last_dir()
  if run.acc.rank == 0 then
    local last = dir:match("^(.*)/[^/]+$") .. "/last"
    assert(os.remove(last), "cannot remove " .. last)
    assert(os.execute("mkdir -p '" .. last .. "/blocker'") == 0, "cannot create " .. last)
    print("replaced " .. last .. " with a folder after step " .. step)
    io.stdout:flush()
  end
  broken = true
end

training.run(lr, cfg)
error("the run ended although its background checkpoint writer failed")
