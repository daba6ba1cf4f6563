-- Optimizers and schedulers from Lua: steps against hand-computed values, groups, clipping,
-- scheduler lr at given steps, and argument errors.
local lr = require "lrhost"
local t = require "testlib"

local function scalar_param(value)
  return lr.tensor({ value }, { dtype = "float64", requires_grad = true })
end

-- SGD: p <- p - lr * grad, with grad of (p * 2):sum() being 2.
do
  local p = scalar_param(1)
  local opt = lr.optim.sgd({ p }, { lr = 0.1 })
  local loss = (p * 2):sum()
  loss:backward()
  opt:step()
  t.near(p:item(), 0.8, 1e-12, "sgd step")
  opt:zero_grad()
  t.eq(p.grad, nil, "zero_grad sets grads to none")
end

-- SGD with momentum 0.9, two steps of grad 2: 1 -> 0.8 -> 0.42.
do
  local p = scalar_param(1)
  local opt = lr.optim.sgd({ p }, { lr = 0.1, momentum = 0.9 })
  for _ = 1, 2 do
    opt:zero_grad()
    ;(p * 2):sum():backward()
    opt:step()
  end
  t.near(p:item(), 0.42, 1e-12, "sgd momentum")
end

-- AdamW: decoupled decay then a first step of exactly lr: 1 * (1 - 0.1 * 0.01) - 0.1.
do
  local p = scalar_param(1)
  local opt = lr.optim.adamw({ p }, { lr = 0.1, weight_decay = 0.01 })
  ;(p * 2):sum():backward()
  opt:step()
  t.near(p:item(), 0.899, 1e-7, "adamw step")
end

-- Parameter groups with their own lr; lr() / set_lr() per group (1-based).
do
  local a, b = scalar_param(1), scalar_param(1)
  local opt = lr.optim.sgd({ { params = { a }, lr = 0.01, name = "backbone" }, { params = { b } } }, { lr = 0.1 })
  t.eq(opt:num_groups(), 2, "groups")
  t.near(opt:lr(1), 0.01, 1e-12, "group 1 lr")
  t.near(opt:lr(2), 0.1, 1e-12, "group 2 lr")
  ;(a + b):sum():backward()
  opt:step()
  t.near(a:item(), 0.99, 1e-12, "group 1 step")
  t.near(b:item(), 0.9, 1e-12, "group 2 step")
  opt:set_lr(0.5, 2)
  t.near(opt:lr(2), 0.5, 1e-12, "set_lr one group")
  opt:set_lr(0.2)
  t.near(opt:lr(1), 0.2, 1e-12, "set_lr all groups")
  t.raises(function() opt:lr(3) end, "group must be between 1 and 2")
end

-- Gradient clipping: grads (3, 4) have norm 5; clipped to norm 1 they become (0.6, 0.8).
do
  local p = lr.tensor({ 0, 0 }, { requires_grad = true })
  local opt = lr.optim.sgd({ p }, { lr = 1 })
  ;(p * lr.tensor({ 3, 4 })):sum():backward()
  t.near(opt:clip_grad_norm(1.0), 5, 1e-6, "norm before clipping")
  t.near(p.grad:tolist(), { 0.6, 0.8 }, 1e-6, "clipped grads")
end

-- A policy's param_groups feed an optimizer directly.
do
  local policy = lr.policy.new { type = "mlp", input_dim = 2, output_dim = 1, hidden_dims = { 3 } }
  local opt = lr.optim.adam(policy, { lr = 1e-3 })
  t.eq(#opt:parameters(), 4, "mlp parameters reach the optimizer")
end

-- Schedulers: lr after n steps, stepped once per optimizer step.
do
  local p = scalar_param(1)
  local opt = lr.optim.sgd({ p }, { lr = 1.0 })
  local sched = lr.optim.scheduler(opt, { type = "cosine_with_warmup", warmup_steps = 10, total_steps = 110 })
  t.near(sched:lr(), 0, 1e-12, "cosine at 0")
  local expected = { [5] = 0.5, [10] = 1.0, [60] = 0.5, [110] = 0.0 }
  for step = 1, 110 do
    sched:step()
    if expected[step] then t.near(opt:lr(), expected[step], 1e-9, "cosine at " .. step) end
  end
  t.eq(sched:last_step(), 110, "last_step")
  sched:set_step(35)
  t.near(opt:lr(), 0.5 * (1 + math.cos(math.pi * 0.25)), 1e-9, "cosine at 35")

  local lin = lr.optim.scheduler(opt, { type = "linear_with_warmup", warmup_steps = 2, total_steps = 6 })
  for _ = 1, 4 do lin:step() end
  t.near(opt:lr(), 0.5, 1e-12, "linear at 4")
  local warm = lr.optim.scheduler(opt, { type = "constant_with_warmup", warmup_steps = 4 })
  warm:step()
  t.near(warm:lr(), 0.25, 1e-12, "warmup at 1")
end

-- Errors name the argument and what was expected.
do
  local p = scalar_param(1)
  t.raises(function() lr.optim.adamw({}, {}) end, "bad argument #1 to 'lr.optim.adamw' (no parameters given")
  t.raises(function() lr.optim.adamw({ 1, 2 }, {}) end, "groups[1] must be a table")
  t.raises(function() lr.optim.adamw({ p }, { lr = "x" }) end, "'lr' must be a number")
  t.raises(function() lr.optim.adamw({ p }, { lrr = 1 }) end, "did you mean 'lr'")
  t.raises(function() lr.optim.sgd({ { params = { p }, momentum = 1 } }) end,
    "optimizer groups[1]: unknown option 'momentum'")
  t.raises(function() lr.optim.sgd({ { params = { p } }, { params = { p }, lr = "x" } }) end,
    "optimizer groups[2]: 'lr' must be a number")
  t.raises(function() lr.optim.sgd({ { params = { p }, weight_decay = true } }) end,
    "optimizer groups[1]: 'weight_decay' must be a number")
  t.raises(function() lr.optim.sgd({ { params = { p }, name = 3 } }) end, "optimizer groups[1]: 'name' must be a string")
  local opt = lr.optim.sgd({ p }, { lr = 1 })
  t.raises(function() lr.optim.scheduler(opt, { type = "cosine" }) end, "must be one of 'constant'")
  t.raises(function() lr.optim.scheduler(opt, { type = "linear_with_warmup", warmup_steps = 5 }) end,
    "'total_steps' must be positive, got 0")
  -- A run shorter than its warmup only warms up (Hugging Face allows it; Diffusion's preset has 500).
  local short = lr.optim.scheduler(opt, { type = "cosine_with_warmup", warmup_steps = 10, total_steps = 4 })
  short:step()
  t.near(opt:lr(), 0.1, 1e-12, "warmup factor 1/10 when total_steps < warmup_steps")
  t.raises(function() lr.optim.scheduler(p, { type = "constant" }) end,
    "bad argument #1 to 'lr.optim.scheduler' (expected Optimizer, got Tensor)")
  t.raises(function() opt:clip_grad_norm(-1) end, "max_norm must be > 0")
  opt:release()
  t.raises(function() opt:step() end, "Optimizer was released")
end

t.done()
