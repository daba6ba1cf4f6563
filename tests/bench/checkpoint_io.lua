-- Checkpoint save/load benchmark for ACT at LeRobot's reference configuration (14-D state and
-- action, one 3x480x640 camera, 51.7 M weights): one training step so that the AdamW state exists,
-- then `repeats` full training checkpoints (pretrained_model + training_state, fsynced, atomic) and
-- `repeats` lr.policy.load of the pretrained folder. Prints mean seconds and the files' sizes.
--   lrhost tests/bench/checkpoint_io.lua [out=DIR (default: the run folder)] [repeats=3]
local lr = require "lrhost"
local cfg = lr.config { out = "", repeats = 3, steps = 1000 }
local out = cfg.out ~= "" and cfg.out or lr.run_dir()

lr.manual_seed(0)
local features = { inputs = { ["observation.state"] = { 14 }, ["observation.images.top"] = { 3, 480, 640 } },
                   outputs = { action = { 14 } } }
local policy = lr.policy.new({ type = "act" }, features)
local options = policy:optimizer_preset()
options.type, options.grad_clip_norm = nil, nil
local opt = lr.optim.adamw(policy, options)
local b = 2
local loss = policy:forward { ["observation.state"] = lr.randn(b, 14), ["observation.images.top"] = lr.randn(b, 3, 96, 128),
                              action = lr.randn(b, 100, 14), action_is_pad = lr.zeros(b, 100, { dtype = "bool" }) }
loss:backward()
opt:step()

local ckpt = lr.checkpoint(out, { policy = policy, optimizer = opt, config = cfg, total_steps = cfg.steps })
local save_s = 0
for i = 1, cfg.repeats do
  local start = lr.clock()
  ckpt:save(i)
  save_s = save_s + lr.clock() - start
end
local dir = ckpt:last_dir()
local load_s = 0
for _ = 1, cfg.repeats do
  local start = lr.clock()
  local loaded = lr.policy.load(dir .. "/pretrained_model")
  load_s = load_s + lr.clock() - start
  loaded = nil
  collectgarbage()
end
local function size(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n / 1e6
end
print(string.format("ACT checkpoint (%d weights): save %.2f s (pretrained_model + training_state, fsynced), "
                    .. "load pretrained %.2f s; model.safetensors %.1f MB, optimizer_state.safetensors %.1f MB",
                    policy:num_parameters(), save_s / cfg.repeats, load_s / cfg.repeats,
                    size(dir .. "/pretrained_model/model.safetensors"),
                    size(dir .. "/training_state/optimizer_state.safetensors")))
