-- GPU only: accelerator.cuda_graph captures ACT's whole training step (forward, backward, clipping,
-- AdamW) after the eager warm-up steps and replays it.
--  * Equivalence: a deterministic ACT (no dropout, no VAE) trained 8 steps with the graph equals
--    the same 8 eager steps (fp32, TF32 off) within 1e-5 relative: losses, norms and parameters.
--  * Randomness stays random: with dropout and the VAE and lr = 1e-30 (the parameters do not change),
--    replays of one batch give different losses; frozen random draws would repeat one value.
--  * A batch of another shape runs eagerly, and the graph goes on afterwards; another clip norm
--    than the captured one is an error.
--  * Diffusion (LeRobot's defaults: no crop) captures; with a random crop, drawn on the host, it is
--    refused with the reason.
local lr = require "lrhost"
local t = require "testlib"

local FEATURES = { inputs = { ["observation.state"] = { 6 }, ["observation.images.top"] = { 3, 64, 80 } },
                   outputs = { action = { 6 } } }
local function act(extra)
  local cfg = { type = "act", dim_model = 64, n_heads = 4, dim_feedforward = 128, chunk_size = 10,
                n_action_steps = 10, n_encoder_layers = 2, n_decoder_layers = 1 }
  for k, v in pairs(extra) do cfg[k] = v end
  lr.manual_seed(5)
  return lr.policy.new(cfg, FEATURES)
end
local function batch_of(acc, n)
  return acc:to_device { ["observation.state"] = lr.randn(n, 6), ["observation.images.top"] = lr.rand(n, 3, 64, 80),
                         action = lr.randn(n, 10, 6), action_is_pad = lr.zeros(n, 10, { dtype = "bool" }) }
end

local function train(graph, policy_extra, lr_value, steps, same_batch)
  local acc = lr.accelerator { accelerator = { cuda_graph = graph, tf32 = false } }
  assert(acc.device:match("^cuda"), "expected a CUDA device, got " .. acc.device)
  local policy = act(policy_extra)
  -- eps 1e-3: Adam would turn the rounding noise of gradients that are zero in exact arithmetic
  -- (the key projection's bias: softmax ignores it) into lr-sized steps of either sign, which two
  -- kernel schedules round differently; a larger eps keeps such steps at lr * noise / eps.
  local opt = lr.optim.adamw(policy, { lr = lr_value, weight_decay = 1e-4, eps = 1e-3 })
  acc:prepare(policy, opt)
  lr.manual_seed(7)
  local fixed = batch_of(acc, 8)
  local losses, norms = {}, {}
  for i = 1, steps do
    local batch = same_batch and fixed or batch_of(acc, 8)
    local loss, parts, norm = acc:train_step(policy, opt, batch, 10.0)
    t.truthy(parts.l1_loss ~= nil, "loss parts")
    losses[i], norms[i] = loss:item(), norm
  end
  return losses, norms, policy:named_parameters(), acc, policy, opt
end

do
  local deterministic = { dropout = 0.0, use_vae = false }
  local eager_losses, eager_norms, eager_params = train(false, deterministic, 1e-4, 8)
  local graph_losses, graph_norms, graph_params, acc = train(true, deterministic, 1e-4, 8)
  t.eq(acc.cuda_graph, "captured", "the step was captured")
  t.near(graph_losses, eager_losses, 1e-5, "graph losses equal eager losses")
  t.near(graph_norms, eager_norms, 1e-5, "graph gradient norms equal eager norms")
  for name, p in pairs(eager_params) do
    t.truthy(graph_params[name]:allclose(p, 1e-5, 1e-6), "graph parameters equal eager parameters: " .. name)
  end
  print(string.format("graph vs eager: last loss %.7f vs %.7f", graph_losses[8], eager_losses[8]))
end

do
  local losses, _, _, acc, policy, opt = train(true, { dropout = 0.1, use_vae = true }, 1e-30, 7, true)
  t.eq(acc.cuda_graph, "captured", "captured with dropout and the VAE")
  -- Steps 4.. are replays (3 eager warm-up steps first) of the same batch with unchanged weights.
  t.truthy(losses[5] ~= losses[4] and losses[6] ~= losses[5] and losses[7] ~= losses[6],
           "replays draw fresh random numbers: " .. table.concat(losses, ", ", 4, 7))
  -- Another batch size: an eager step with a warning, then the graph again.
  local function finite(loss) local v = loss:item() return v == v and math.abs(v) < math.huge end
  t.truthy(finite(acc:train_step(policy, opt, batch_of(acc, 4), 10.0)), "eager step for a batch of 4")
  t.truthy(finite(acc:train_step(policy, opt, batch_of(acc, 8), 10.0)), "replay after the eager step")
  t.eq(acc.cuda_graph, "captured", "still captured")
  -- The captured step keeps its clip norm: another one is an error, not a silent no-op.
  t.raises(function() acc:train_step(policy, opt, batch_of(acc, 8), 5.0) end,
           "must pass the policy, optimizer and max_norm of the first")
end

for _, crop in ipairs { false, true } do
  local acc = lr.accelerator { accelerator = { cuda_graph = true } }
  lr.manual_seed(1)
  local cfg = { type = "diffusion", down_dims = { 32, 64 }, horizon = 8, n_action_steps = 4 }
  if crop then cfg.crop_shape = { 84, 84 } end
  local policy = lr.policy.new(cfg, { inputs = { ["observation.state"] = { 2 }, ["observation.images.top"] = { 3, 96, 96 } },
                                      outputs = { action = { 2 } } })
  local opt = lr.optim.adam(policy, { lr = 1e-4 })
  acc:prepare(policy, opt)
  local n = policy:config().n_obs_steps
  for _ = 1, 5 do
    local batch = acc:to_device { ["observation.state"] = lr.randn(2, n, 2), ["observation.images.top"] = lr.rand(2, n, 3, 96, 96),
                                  action = lr.randn(2, 8, 2), action_is_pad = lr.zeros(2, 8, { dtype = "bool" }) }
    local v = acc:train_step(policy, opt, batch, 10.0):item()
    t.truthy(v == v and math.abs(v) < math.huge, "diffusion loss finite")
  end
  if crop then
    t.truthy(acc.cuda_graph:find("^eager: Diffusion's random crop") ~= nil, "random crop refused: " .. acc.cuda_graph)
  else
    t.eq(acc.cuda_graph, "captured", "diffusion without a crop captured")
  end
end

t.done()
print("cuda graph step ok")
