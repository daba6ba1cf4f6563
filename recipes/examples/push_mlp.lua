-- Learns the built-in pushing task (lr.default_dataset(), written on first use) with the `mlp`
-- policy from the state alone: the expert's velocity command is a function of the agent, block and
-- goal positions. Trains on all but the last `eval_episodes` episodes through the C++ loader
-- (state and action only, so no video is decoded), normalizes with the dataset's stats like
-- LeRobot (MEAN_STD), then compares the held-out action error with a constant-action baseline
-- (the training mean) and fails unless the policy beats it by `min_gain`.
--   lrhost recipes/examples/push_mlp.lua steps=1500
local lr = require "lrhost"

local cfg = lr.config {
  seed = 0,
  steps = 1200,
  batch_size = 64,
  log_freq = 200,
  eval_episodes = 8,
  min_gain = 3.0,   -- baseline MSE / policy MSE on held-out episodes must be at least this
  dataset = { root = "", num_workers = 2 },
  policy = { type = "mlp", hidden_dims = { 128, 128 }, activation = "gelu" },
  optimizer = { lr = 2e-3, weight_decay = 1e-4, grad_clip_norm = 1.0 },
}
lr.manual_seed(cfg.seed)
local root = cfg.dataset.root ~= "" and cfg.dataset.root or lr.default_dataset()

local probe = lr.dataset.lerobot { root = root, keys = {} }
local total = probe:meta().total_episodes
assert(total > cfg.eval_episodes, "the dataset needs more episodes than eval_episodes")
local train_episodes, eval_episodes = {}, {}
for e = 0, total - 1 do
  table.insert(e < total - cfg.eval_episodes and train_episodes or eval_episodes, e)
end
local keys = { "observation.state", "action" }
local train = lr.dataset.lerobot { root = root, episodes = train_episodes, keys = keys }
local held_out = lr.dataset.lerobot { root = root, episodes = eval_episodes, keys = keys }
local norm = train:normalizer { STATE = "MEAN_STD", ACTION = "MEAN_STD" }

local policy = lr.policy.new(cfg.policy, { inputs = { ["observation.state"] = { 6 } }, outputs = { action = { 2 } } })
local opt = lr.optim.adamw(policy, cfg.optimizer)
local loader = train:loader { batch_size = cfg.batch_size, seed = cfg.seed, num_workers = cfg.dataset.num_workers }
lr.log.info(string.format("push_mlp: %d train frames (%d episodes), %d held-out frames (%d episodes)", #train,
                          #train_episodes, #held_out, #eval_episodes))

for step, batch in loader:steps(1, cfg.steps) do
  local loss = policy:forward(norm:normalize(batch))
  loss:backward()
  opt:clip_grad_norm(cfg.optimizer.grad_clip_norm)
  opt:step()
  opt:zero_grad()
  if step % cfg.log_freq == 0 or step == cfg.steps then lr.log_step(step, { loss = loss:item() }) end
end

-- Held-out evaluation in action units (unnormalized), against the training mean action.
policy:eval()
local state, action = held_out:column("observation.state"), held_out:column("action")
local predicted = lr.no_grad(function()
  local normalized = norm:normalize { ["observation.state"] = state, action = action }
  local out = policy:select_action(normalized)
  return norm:unnormalize("action", out)
end)
local mean_action = train:column("action"):mean(0)
local policy_mse = ((predicted - action) ^ 2):mean():item()
local baseline_mse = ((action - mean_action) ^ 2):mean():item()
local gain = baseline_mse / policy_mse
-- "better" only when the policy's error is lower; NaN (a diverged run) compares false everywhere.
local function finite(x) return x == x and x > -math.huge and x < math.huge end
local verdict = not (finite(policy_mse) and finite(baseline_mse)) and "not comparable: non-finite MSE"
                or gain > 1 and string.format("%.1fx better", gain)
                or string.format("%.1fx worse", policy_mse / baseline_mse)
lr.log.info(string.format("held-out action MSE: policy %.3e, constant baseline %.3e (%s)", policy_mse, baseline_mse,
                          verdict))
if not (gain >= cfg.min_gain) then
  error(string.format("the policy beats the constant baseline only %.2fx (need %.1fx)", gain, cfg.min_gain))
end
