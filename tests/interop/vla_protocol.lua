-- The protocol of the VLA interop tests with lrhost (smolvla_oracle.py / pi_oracle.py PROTOCOL), shared by
-- smolvla_driver.lua (mode=run) and pi_driver.lua; it does not depend on the policy type.
--
--   require("vla_protocol").run{ dir = DIR, inputs = IN.safetensors, tasks = IN.tasks.json,
--                                out = OUT.safetensors, resave = DIR2 or "" }
--
-- Loads DIR strictly (lr.policy.load), optionally re-saves it to DIR2, preprocesses the raw batch
-- (batch.<key>) with the task strings, and writes: norm.observation.state, norm.action, tokens, token_mask;
-- train mode: loss (forward with the given noise and time in the batch), grad.<param> of every parameter
-- with a gradient; eval mode: chunk (predict_action_chunk with the given noise), chunk_unnorm.
local lr = require "lrhost"

local M = {}

local function starts(s, prefix) return s:sub(1, #prefix) == prefix end

-- The protocol's outputs of a loaded policy on the raw batch `inputs` (a loaded safetensors table) and
-- the task strings; leaves the gradients on the parameters and the policy in eval mode.
function M.outputs(policy, inputs, tasks)
  local raw = {}
  for k, v in pairs(inputs) do
    if starts(k, "batch.") then raw[k:sub(7)] = v end
  end
  local norm = policy:preprocess(raw, tasks)
  local out = {
    ["norm.observation.state"] = norm["observation.state"],
    ["norm.action"] = norm.action,
    tokens = norm["observation.language.tokens"],
    token_mask = norm["observation.language.attention_mask"],
  }
  local train_batch = {}
  for k, v in pairs(norm) do train_batch[k] = v end
  train_batch.noise = inputs.noise
  train_batch.time = inputs.time

  policy:train()
  local loss = policy:forward(train_batch)
  loss:backward()
  out.loss = loss:detach()
  for name, p in pairs(policy:named_parameters()) do
    if p.grad then out["grad." .. name] = p.grad end
  end

  policy:eval()
  lr.no_grad(function()
    local obs = { noise = inputs.noise }
    for k, v in pairs(norm) do
      if starts(k, "observation.") then obs[k] = v end
    end
    policy:reset()
    out.chunk = policy:predict_action_chunk(obs)
    out.chunk_unnorm = policy:postprocess(out.chunk)
  end)
  for k, v in pairs(out) do out[k] = v:contiguous() end
  return out
end

function M.run(opts)
  assert(opts.dir ~= "" and opts.inputs ~= "" and opts.tasks ~= "" and opts.out ~= "",
         "dir=, inputs=, tasks= and out= are required")
  local policy = lr.policy.load(opts.dir, { strict = true })
  if opts.resave ~= nil and opts.resave ~= "" then policy:save_pretrained(opts.resave) end
  local out = M.outputs(policy, lr.load_safetensors(opts.inputs), lr.read_json(opts.tasks))
  lr.save_safetensors(opts.out, out, { producer = "lrhost" })
  return out
end

return M
