-- Training-step time during an asynchronous checkpoint save against a synchronous one, on CPU: ACT
-- at LeRobot's reference size (51.7 M weights, so a checkpoint with its AdamW state is ~620 MB) on
-- small random batches (image=HxW, default 96x128: the step stays short next to the save). Every step
-- is timed on its own. Three phases: `steps` steps without saves; `saves` rounds of a synchronous save
-- after a step (that step's time includes the save: checkpoint_s) followed by `steps_between` steps;
-- the same with save_async = true, where the save's own time is only the copy into host memory and the
-- following steps overlap the background writer until its folder appears (checked after each step;
-- the step in which it appears counts as overlapping). Prints the mean of each kind of step.
--   lrhost tests/bench/async_save_step.lua --threads 2 [out=DIR] [steps=6] [saves=2] [steps_between=5]
-- out= (default: the run folder) must not hold this benchmark's checkpoints from an earlier run.
local lr = require "lrhost"
local cfg = lr.config { out = "", steps = 6, saves = 2, steps_between = 5, image = "96x128", warmup = 2 }
local out = cfg.out ~= "" and cfg.out or lr.run_dir()
local height, width = cfg.image:match("^(%d+)x(%d+)$")
assert(height, "image must be HxW, got " .. cfg.image)

lr.manual_seed(0)
local features = { inputs = { ["observation.state"] = { 14 }, ["observation.images.top"] = { 3, 480, 640 } },
                   outputs = { action = { 14 } } }
local policy = lr.policy.new({ type = "act" }, features)
local options = policy:optimizer_preset()
options.type, options.grad_clip_norm = nil, nil
local opt = lr.optim.adamw(policy, options)
local b = 2
local batch = { ["observation.state"] = lr.randn(b, 14),
                ["observation.images.top"] = lr.randn(b, 3, tonumber(height), tonumber(width)),
                action = lr.randn(b, 100, 14), action_is_pad = lr.zeros(b, 100, { dtype = "bool" }) }

-- One optimizer step; returns its seconds.
local function step()
  local start = lr.clock()
  local loss = policy:forward(batch)
  loss:backward()
  opt:step()
  opt:zero_grad()
  return lr.clock() - start
end
local function mean(list)
  local sum = 0
  for _, x in ipairs(list) do sum = sum + x end
  return #list > 0 and sum / #list or 0 / 0
end

for _ = 1, cfg.warmup do step() end
local plain = {}
for _ = 1, cfg.steps do plain[#plain + 1] = step() end

-- `saves` rounds in one mode; returns the seconds of: the saving steps (step + save()), save() alone,
-- the steps overlapping the background writer, the steps after it; and the steps each write overlapped.
local counter = 0
local function base(path) return path and path:match("[^/]+$") end
local function rounds(async)
  local ckpt = lr.checkpoint(string.format("%s/%s", out, async and "async" or "sync"),
                             { policy = policy, optimizer = opt, config = cfg, total_steps = 1000000,
                               async = async, keep_last = 1 })
  local r = { saving = {}, save = {}, overlapping = {}, between = {}, overlaps = {} }
  for _ = 1, cfg.saves do
    counter = counter + 1
    local step_s = step()
    local start = lr.clock()
    local folder = base(ckpt:save(counter))
    local save_s = lr.clock() - start
    r.save[#r.save + 1], r.saving[#r.saving + 1] = save_s, step_s + save_s
    local writing, overlapped = async, 0
    for _ = 1, cfg.steps_between do
      local s = step()
      if writing then
        r.overlapping[#r.overlapping + 1], overlapped = s, overlapped + 1
        writing = base(ckpt:last_dir()) ~= folder
      else
        r.between[#r.between + 1] = s
      end
    end
    -- Still writing after steps_between steps: the figure is a lower bound (raise steps_between).
    r.overlaps[#r.overlaps + 1] = writing and (">" .. overlapped) or tostring(overlapped)
    ckpt:wait()
  end
  r.dir = ckpt:last_dir()
  return r
end
local sync, async = rounds(false), rounds(true)

local bytes = 0
for _, file in ipairs { "pretrained_model/model.safetensors", "training_state/optimizer_state.safetensors" } do
  local f = assert(io.open(sync.dir .. "/" .. file, "rb"))
  bytes = bytes + f:seek("end")
  f:close()
end
print(string.format("async save bench: ACT %d weights, checkpoint tensors %.0f MB, image %s, batch %d, %d saves per mode",
                    policy:num_parameters(), bytes / 1e6, cfg.image, b, cfg.saves))
print(string.format("step without saves: %.3f s (mean of %d)", mean(plain), #plain))
print(string.format("sync save: saving step %.3f s (save %.3f s = checkpoint_s); steps after it %.3f s",
                    mean(sync.saving), mean(sync.save), mean(sync.between)))
print(string.format("async save: saving step %.3f s (save() %.3f s: the host copy); steps overlapping the writer "
                    .. "%.3f s (mean of %d; per save %s); steps after it %.3f s",
                    mean(async.saving), mean(async.save), mean(async.overlapping), #async.overlapping,
                    table.concat(async.overlaps, ", "), mean(async.between)))
