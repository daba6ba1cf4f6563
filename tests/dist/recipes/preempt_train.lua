-- The shared training loop (recipes/lib/policy_training.lua) on a tiny ACT (a single small
-- encoder and decoder layer), slowed to `step_sleep`
-- seconds a step so that preempt.sh's signal lands mid-run; rank 0 prints "step N done" after each
-- step for the test to time its signal. With `slow_preempt_save` > 0, a preemption first waits that
-- many seconds (a save as slow as a large model's) so that a second signal can arrive during it.
local lr = require "lrhost"
local sys = require "dist_sys"
local training = require "policy_training"
local cfg = lr.config(training.defaults {
  policy = lr.policy.defaults("act", { chunk_size = 10, n_action_steps = 1, dim_model = 32, dim_feedforward = 64,
                                       n_heads = 2, n_encoder_layers = 1, n_decoder_layers = 1,
                                       n_vae_encoder_layers = 1 }),
  steps = 40, batch_size = 8, num_workers = 1, save_freq = 10, log_freq = 10, eval_batches = 2,
  step_sleep = 0.0, slow_preempt_save = 0.0,
})

local step = training.step
training.step = function(run, n, batch)
  local out = step(run, n, batch)
  if cfg.step_sleep > 0 then sys.sleep(cfg.step_sleep) end
  if sys.rank() == 0 then
    print(string.format("step %d done", n))
    io.stdout:flush()
  end
  return out
end

if cfg.slow_preempt_save > 0 then
  local preempt = training.preempt_if_requested
  training.preempt_if_requested = function(run, n)
    if run.acc:stop_requested() then
      print(string.format("rank %d: preemption save starts", sys.rank()))
      io.stdout:flush()
      sys.sleep(cfg.slow_preempt_save)
    end
    return preempt(run, n)
  end
end

training.run(lr, cfg)
