-- The learning bar's reference points on the built-in pushing task, on the same episodes (seeds)
-- `lrhost eval` uses: the scripted expert that wrote the dataset, and a constant action (the
-- dataset's mean action, the held-out baseline of recipes/lib/policy_training.lua). Prints one line
-- per controller with its success rate, 95 % interval and mean return.
--   lrhost tests/bench/push_baselines.lua episodes=50
local lr = require "lrhost"
local eval = require "closed_loop_eval"

local cfg = lr.config { episodes = eval.DEFAULTS.episodes, seed = eval.DEFAULTS.seed, max_steps = eval.DEFAULTS.max_steps }

local mean_action = lr.dataset.lerobot({ root = lr.default_dataset() }):column("action"):mean(0)

local function run(name, controller)
  local successes, returns, distances = 0, 0, 0
  for e = 0, cfg.episodes - 1 do
    local env = lr.env.push { seed = cfg.seed + e, max_steps = cfg.max_steps }
    env:reset()
    local done = false
    while not done do
      local _, reward, terminated, truncated = env:step(controller(env))
      returns = returns + reward
      done = terminated or truncated
    end
    successes = successes + (env:is_success() and 1 or 0)
    distances = distances + env:final_distance()
  end
  local ci = eval.wilson_interval(successes, cfg.episodes)
  print(string.format("push_baseline %-16s success %d/%d = %.1f%% (95%% interval %.1f-%.1f%%) mean_return %.3f "
                      .. "mean_final_distance %.3f", name, successes, cfg.episodes, 100 * successes / cfg.episodes,
                      100 * ci[1], 100 * ci[2], returns / cfg.episodes, distances / cfg.episodes))
end

run("scripted_expert", function(env) return env:expert_action() end)
run("constant_action", function() return mean_action end)
