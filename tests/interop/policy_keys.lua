-- lrhost's key/shape/dtype tables of ACT and Diffusion for the reference configurations of
-- reference/lerobot.md §4 (the lrhost half of policy_keys.py; compared by policy_keys_compare.py):
--
--   lrhost tests/interop/policy_keys.lua out=FILE.json
--
-- Output: {"<name>": {"state_dict": {key: [shape, dtype]}, "param_shapes": [shape, ...] (in
-- parameters() order), "param_groups": [[count, lr or -1], ...], "config": policy:config()}} for the
-- names of policy_keys.py: act_ref, diffusion_ref_head_defaults, diffusion_ref_044_defaults.
local lr = require "lrhost"

local cfg = lr.config { out = "" }
assert(cfg.out ~= "", "out=FILE.json is required")

local function features(state, action, image)
  return { inputs = { ["observation.state"] = { state }, ["observation.images.top"] = image },
           outputs = { action = { action } } }
end

local configs = {
  { "act_ref", { type = "act" }, features(14, 14, { 3, 480, 640 }) },
  -- lrhost's defaults are HEAD's (horizon 64, 32 actions, BatchNorm, one encoder per camera).
  { "diffusion_ref_head_defaults", { type = "diffusion" }, features(2, 2, { 3, 96, 96 }) },
  { "diffusion_ref_044_defaults",
    { type = "diffusion", horizon = 16, n_action_steps = 8, use_group_norm = true,
      use_separate_rgb_encoder_per_camera = false }, features(2, 2, { 3, 96, 96 }) },
}

local result = {}
for _, entry in ipairs(configs) do
  local name, policy_cfg, feats = entry[1], entry[2], entry[3]
  local policy = lr.policy.new(policy_cfg, feats)
  local sd = {}
  for k, t in pairs(policy:state_dict()) do sd[k] = { t.shape, t.dtype } end
  local shapes = {}
  for i, p in ipairs(policy:parameters()) do shapes[i] = p.shape end
  local groups = {}
  for i, g in ipairs(policy:param_groups()) do groups[i] = { #g.params, g.lr or -1 } end
  result[name] = { state_dict = sd, param_shapes = shapes, param_groups = groups, config = policy:config() }
  print(string.format("%s: %d parameters", name, policy:num_parameters()))
  policy:release()
  collectgarbage()
end
local f = assert(io.open(cfg.out, "w"))
f:write(lr.config_json(result, 1))
f:close()
