-- acc:train_step: one call for forward, backward, clipping, optimizer step and zero_grad equals the
-- recipe's explicit loop bit for bit (also in its options form, with scheduler, meter phases and
-- memory figures); accelerator.cuda_graph on a machine without a GPU says why it
-- runs eager steps (and still trains identically); tf32 / cudnn_benchmark / cuda_graph are checked
-- config keys; argument errors. The capture itself is tests/gpu/cuda_graph_step.lua.
local lr = require "lrhost"
local t = require "testlib"

local function make_policy()
  lr.manual_seed(3)
  return lr.policy.new { type = "mlp", input_dim = 4, output_dim = 2, hidden_dims = { 16, 16 } }
end
local function batches(n)
  lr.manual_seed(11)
  local list = {}
  for i = 1, n do list[i] = { ["observation.state"] = lr.randn(8, 4), action = lr.randn(8, 2) } end
  return list
end

-- Runs `steps` steps either through acc:train_step or through the explicit calls; returns the
-- per-step losses and gradient norms and the final parameters.
local function train(accelerator_cfg, use_train_step, clip)
  local acc = lr.accelerator { accelerator = accelerator_cfg }
  local policy = make_policy()
  local opt = lr.optim.adamw(policy, { lr = 1e-2, weight_decay = 1e-2 })
  local sched = lr.optim.scheduler(opt, { type = "linear_with_warmup", warmup_steps = 2, total_steps = 6 })
  acc:prepare(policy, opt)
  local losses, norms = {}, {}
  for i, batch in ipairs(batches(6)) do
    local loss, parts, norm
    if use_train_step then
      loss, parts, norm = acc:train_step(policy, opt, batch, clip)
    else
      loss, parts = policy:forward(batch)
      acc:backward(loss)
      if clip then norm = acc:clip_grad_norm(clip) end
      opt:step()
      opt:zero_grad()
    end
    t.truthy(parts.prediction ~= nil, "the loss parts come back")
    sched:step()
    losses[i], norms[i] = loss:item(), norm
  end
  return losses, norms, policy:named_parameters(), acc
end

do
  local want_losses, want_norms, want_params = train({}, false, 0.5)
  local got_losses, got_norms, got_params = train({}, true, 0.5)
  t.eq(got_losses, want_losses, "train_step losses equal the explicit loop's")
  t.eq(got_norms, want_norms, "train_step gradient norms equal the explicit loop's")
  for name, p in pairs(want_params) do t.truthy(got_params[name]:equal(p), "same parameters: " .. name) end

  -- Without clipping: no norm, and the same training as the loop without clip_grad_norm.
  local plain_losses, plain_norms = train({}, false, nil)
  local step_losses, step_norms = train({}, true, nil)
  t.eq(step_losses, plain_losses, "train_step without clipping")
  t.eq(#step_norms, 0, "no gradient norm without clipping")
  t.eq(#plain_norms, 0, "no gradient norm in the loop without clipping")

  -- cuda_graph on a CPU: refused with the reason, the same training.
  local graph_losses, _, graph_params, acc = train({ cuda_graph = true }, true, 0.5)
  t.eq(graph_losses, want_losses, "cuda_graph requested on a CPU trains eagerly, identically")
  for name, p in pairs(want_params) do t.truthy(graph_params[name]:equal(p), "same parameters: " .. name) end
  t.eq(acc.cuda_graph, "eager: the device is not a GPU", "the accelerator says why it did not capture")
  t.eq(lr.accelerator({}).cuda_graph, "off", "not requested")
  t.eq(lr.accelerator({ accelerator = { cuda_graph = true } }).cuda_graph, "warming up", "requested, no step yet")
  -- The switches are read (no GPU here: they change nothing), and checked.
  t.eq(lr.accelerator({ accelerator = { tf32 = true, cudnn_benchmark = true } }).device, "cpu", "tf32 accepted")
end

-- The options form, the shared loop's one step shape: the scheduler steps inside, the meter gets
-- the eager step's phases, memory_stats comes back (before zero_grad: the gradients count), and the
-- training is the explicit loop's.
do
  local want_losses, _, want_params = train({}, false, 0.5)
  local acc = lr.accelerator {}
  local policy = make_policy()
  local opt = lr.optim.adamw(policy, { lr = 1e-2, weight_decay = 1e-2 })
  local sched = lr.optim.scheduler(opt, { type = "linear_with_warmup", warmup_steps = 2, total_steps = 6 })
  acc:prepare(policy, opt)
  local meter = acc:training_meter { total_steps = 6 }
  local losses = {}
  for i, batch in ipairs(batches(6)) do
    meter:mark("data")
    local loss, parts, norm, memory = acc:train_step(policy, opt, batch,
        { max_norm = 0.5, meter = meter, scheduler = sched, memory_stats = i == 1 })
    t.truthy(parts.prediction ~= nil and norm ~= nil, "parts and norm")
    if i == 1 then
      t.truthy(memory.parameter_bytes > 0 and memory.gradient_bytes == memory.parameter_bytes
               and memory.optimizer_bytes > 0, "memory before zero_grad: parameters, gradients, Adam state")
    else
      t.eq(memory, nil, "no memory figures unless asked")
    end
    meter:end_step(i)
    losses[i] = loss:item()
  end
  t.eq(losses, want_losses, "the options form trains as the explicit loop (scheduler included)")
  for name, p in pairs(want_params) do t.truthy(policy:named_parameters()[name]:equal(p), "same parameters: " .. name) end
  local window = meter:window()
  for _, phase in ipairs { "data_s", "forward_s", "backward_s", "optimizer_s" } do
    t.truthy(window[phase] ~= nil, "the meter has " .. phase)
  end
  t.eq(window.train_step_s, nil, "an eager step has no train_step phase")
  t.raises(function() acc:train_step(policy, opt, batches(1)[1], { max_nrom = 1 }) end,
           "unknown option 'max_nrom' (valid: max_norm, meter, scheduler, memory_stats)")
  t.raises(function() acc:train_step(policy, opt, batches(1)[1], { meter = opt }) end,
           "meter: expected a TrainingMeter (acc:training_meter), got Optimizer")
  t.raises(function() acc:train_step(policy, opt, batches(1)[1], { memory_stats = 1 }) end, "memory_stats: expected boolean")
  t.raises(function() acc:train_step(policy, opt, batches(1)[1], { max_norm = -1 }) end, "max_norm >= 0")
end

-- Errors.
do
  t.raises(function() lr.accelerator { accelerator = { cuda_graph = "yes" } } end, "cuda_graph")
  t.raises(function() lr.accelerator { accelerator = { tf32 = 1 } } end, "tf32")
  t.raises(function() lr.accelerator { accelerator = { cudnn_benchmark = "on" } } end, "cudnn_benchmark")
  local acc = lr.accelerator {}
  local policy = make_policy()
  local opt = lr.optim.adamw(policy, { lr = 1e-2 })
  local batch = batches(1)[1]
  t.raises(function() acc:train_step(policy, opt, batch, 1.0) end, "call accelerator:prepare(policy, optimizer) first")
  acc:prepare(policy, opt)
  t.raises(function() acc:train_step(policy, opt, batch, -1) end, "bad argument #4")
  t.raises(function() acc:train_step(policy, opt, { action = batch.action }, 1.0) end, "observation.state")
  t.raises(function() acc:train_step(policy, nil, batch) end, "bad argument #2")
end

t.done()
