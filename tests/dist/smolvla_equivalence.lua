-- SmolVLA data-parallel equivalence: after `steps` SGD steps, N ranks x micro-batch b give the same
-- trainable parameters as one process stepping on the whole global batch N*b, and the frozen parts
-- (vision tower, VLM) are untouched on every rank and get no gradient. A tiny SmolVLA on the VLM
-- folder shipped for the CPU recipe (recipes/assets/smolvla_tiny_vlm); batches are random but fixed
-- (seeded), with explicit flow-matching noise and time per sample so both runs see the same ones.
-- Every rank trains through the accelerator (DDP on the trainable parameters only); rank 0 also
-- trains the single-process reference in-process and compares (fp32, relative max difference).
-- gradient_checkpointing=true runs both with activation checkpointing (the gradients of recomputed
-- layers must reach DDP's reducer through the outer graph).
local lr = require "lrhost"
local cfg = lr.config { global_batch = 4, steps = 2, seed = 7, tolerance = 1e-5, vlm = "", gradient_checkpointing = false }
local acc = lr.accelerator { accelerator = { ddp = { first_bucket_mb = 0.05, bucket_cap_mb = 0.2 } } }
local n, r = acc.world_size, acc.rank
assert(cfg.global_batch % n == 0, "global_batch must divide by the ranks")
local b = cfg.global_batch / n
assert(cfg.vlm ~= "", "vlm= (the tiny VLM folder) is required")

local chunk, G = 4, cfg.steps * cfg.global_batch
local policy_cfg = { type = "smolvla", vlm_model_name = cfg.vlm, chunk_size = chunk, n_action_steps = chunk,
                     num_vlm_layers = 4, resize_imgs_with_padding = { 64, 64 }, tokenizer_max_length = 8,
                     gradient_checkpointing = cfg.gradient_checkpointing }
local features = { inputs = { ["observation.state"] = { 5 }, ["observation.images.top"] = { 3, 32, 48 } },
                   outputs = { action = { 4 } } }

lr.manual_seed(123)
local data = {
  image = lr.rand(G, 3, 32, 48), state = lr.randn(G, 5), action = lr.randn(G, chunk, 4),
  tokens = lr.randint(0, 200, { G, 8 }), noise = lr.randn(G, chunk, 32), time = lr.rand(G) * 0.9 + 0.05,
}
local function rows(first, count)
  return {
    ["observation.images.top"] = data.image:narrow(0, first, count),
    ["observation.state"] = data.state:narrow(0, first, count),
    ["observation.language.tokens"] = data.tokens:narrow(0, first, count),
    ["observation.language.attention_mask"] = lr.ones(count, 8, { dtype = "bool" }),
    action = data.action:narrow(0, first, count),
    action_is_pad = lr.zeros(count, chunk, { dtype = "bool" }),
    noise = data.noise:narrow(0, first, count),
    time = data.time:narrow(0, first, count),
  }
end
-- SGD with momentum: Adam would turn the rounding noise of near-zero gradients (which differ with the
-- batch split) into full-size updates, as the ACT FSDP cases note.
local opt_cfg = { lr = 0.05, momentum = 0.9, weight_decay = 0.01 }

lr.manual_seed(cfg.seed + r)  -- deliberately different per rank: prepare must broadcast rank 0's init
local policy = lr.policy.new(policy_cfg, features)
if r == 0 then
  lr.manual_seed(cfg.seed)
  policy = lr.policy.new(policy_cfg, features)
end
local initial = {}
for name, p in pairs(policy:named_parameters()) do
  if name:find("%.vlm%.") then initial[name] = p:clone() end
end
local opt = lr.optim.sgd(policy:param_groups(), opt_cfg)
acc:prepare(policy, opt)
policy:train()
for step = 0, cfg.steps - 1 do
  local loss = policy:forward(acc:to_device(rows(step * cfg.global_batch + r * b, b)))
  acc:backward(loss)
  acc:clip_grad_norm(10.0)
  for name, p in pairs(policy:named_parameters()) do
    if name:find("%.vlm%.") and p.grad then error("frozen parameter " .. name .. " got a gradient") end
  end
  opt:step()
  opt:zero_grad()
end

if r == 0 then
  lr.manual_seed(cfg.seed)
  local ref = lr.policy.new(policy_cfg, features):to(acc.device)
  local ref_opt = lr.optim.sgd(ref:param_groups(), opt_cfg)
  ref:train()
  for step = 0, cfg.steps - 1 do
    local loss = ref:forward(acc:to_device(rows(step * cfg.global_batch, cfg.global_batch)))
    loss:backward()
    ref_opt:clip_grad_norm(10.0)
    ref_opt:step()
    ref_opt:zero_grad()
  end
  local got, want = policy:named_parameters(), ref:named_parameters()
  local worst, worst_name, moved = 0, "", 0
  for name, p in pairs(want) do
    local diff = (got[name]:cpu() - p:cpu()):abs():max():item() / (p:abs():max():item() + 1e-12)
    if diff > worst then worst, worst_name = diff, name end
    if initial[name] then
      assert(got[name]:cpu():equal(initial[name]:cpu()), "frozen parameter " .. name .. " changed")
    elseif p.requires_grad then
      moved = moved + 1
    end
  end
  if not (worst <= cfg.tolerance) then
    error(string.format("smolvla ddp != single process: worst relative difference %.3g at %s", worst, worst_name))
  end
  print(string.format("smolvla ddp equivalence ok: %d ranks x %d rows, worst %.2g, %d trainable tensors moved, "
                      .. "frozen VLM unchanged", n, b, worst, moved))
end
