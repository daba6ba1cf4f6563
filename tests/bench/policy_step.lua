-- Policy training-step benchmark, lrhost side: ACT or Diffusion for reference/lerobot.md §4's
-- configurations (ACT: 14-D state/action, one 3x480x640 camera, defaults; Diffusion: 2-D, one 3x96x96
-- camera, lrhost's defaults = LeRobot HEAD's), a random already-normalized batch, and per step what
-- lerobot-train's update_policy does: forward, backward, clip_grad_norm(grad_clip_norm), step,
-- zero_grad, with the policy's optimizer preset over its param_groups. Prints mean ms/step over
-- `steps` timed steps after `warmup` untimed ones (wall, the fastest step, and the process CPU time
-- of all threads; the last two are less sensitive to other load on a shared machine). Its twin is
-- policy_step.py (LeRobot 0.6.1's own modeling code, same configuration, batch and loop); image=HxW
-- shrinks the camera on both sides.
-- The step goes through an accelerator as recipes/lib/policy_training.lua's does (its divergence
-- guard included). fast_paths=on runs with lrhost's exact-math speed-ups (lr.fast_paths, off by
-- default: folded frozen batch norm and the channels-last trunk), fast_paths=fold with the folding
-- only. On a GPU, tf32=on (the default there) sets TF32 matmuls/convolutions and cuDNN autotuning
-- as lerobot-train does, and cuda_graph=on captures the whole step in a CUDA graph (acc:train_step).
-- The per-phase means (forward, backward, optimizer = clip + step + zero_grad) follow the total; on
-- a GPU they are host-side times unless the phase waits for the device; a captured step has one
-- phase only.
--   lrhost tests/bench/policy_step.lua --threads 2 policy=act [batch_size=8] [image=480x640]
--          [steps=5] [warmup=2] [device=cuda] [fast_paths=on|fold] [tf32=off] [cuda_graph=on]
--          [profile=trace.json]
-- ema=on keeps the EMA of the weights (lr.optim.ema, LeRobot's defaults), updated inside opt:step() after
-- each update, so its cost is in the optimizer phase; its twin is policy_step.py --ema (diffusers'
-- EMAModel.step after optimizer.step(), as LeRobot main's lerobot-train does).
-- profile=PATH runs one more step under the profiler and writes its Chrome trace to PATH
-- (tests/bench/trace_ops.py sums it per operator).
local lr = require "lrhost"
local cfg = lr.config { policy = "act", batch_size = 8, steps = 5, warmup = 2, image = "", device = "cpu", seed = 0,
                        fast_paths = "off", tf32 = "on", cuda_graph = "off", profile = "", ema = "off" }
assert(cfg.ema == "on" or cfg.ema == "off", "ema must be on or off")
for _, key in ipairs { "tf32", "cuda_graph" } do
  assert(cfg[key] == "on" or cfg[key] == "off", key .. " must be on or off")
end
assert(cfg.fast_paths == "on" or cfg.fast_paths == "off" or cfg.fast_paths == "fold",
       "fast_paths must be on, off or fold, got '" .. cfg.fast_paths .. "'")
-- The capture happens after 3 eager steps: time replays only.
assert(cfg.cuda_graph == "off" or cfg.warmup >= 4, "cuda_graph=on needs warmup >= 4 (3 eager steps, then the capture)")
if cfg.fast_paths ~= "off" then lr.fast_paths { fold_frozen_batch_norm = true, channels_last = cfg.fast_paths == "on" } end

local REFERENCE = {
  act = { state = 14, action = 14, h = 480, w = 640 },
  diffusion = { state = 2, action = 2, h = 96, w = 96 },
}
local ref = REFERENCE[cfg.policy] or error("policy must be act or diffusion, got '" .. cfg.policy .. "'")
local h, w = ref.h, ref.w
if cfg.image ~= "" then
  h, w = cfg.image:match("^(%d+)x(%d+)$")
  assert(h, "image must be HxW, got '" .. cfg.image .. "'")
  h, w = tonumber(h), tonumber(w)
end

lr.manual_seed(cfg.seed)
local features = { inputs = { ["observation.state"] = { ref.state }, ["observation.images.top"] = { 3, h, w } },
                   outputs = { action = { ref.action } } }
local policy = lr.policy.new({ type = cfg.policy }, features)
local acc = lr.accelerator { batch_size = cfg.batch_size,
                             accelerator = { tf32 = cfg.tf32 == "on", cudnn_benchmark = cfg.tf32 == "on",
                                             cuda_graph = cfg.cuda_graph == "on" } }
assert(acc.device:match("^" .. cfg.device), "device=" .. cfg.device .. " but the accelerator chose " .. acc.device)
policy:train()
local pc = policy:config()
local b = cfg.batch_size
local batch
if cfg.policy == "act" then
  batch = { ["observation.state"] = lr.randn(b, ref.state), ["observation.images.top"] = lr.randn(b, 3, h, w),
            action = lr.randn(b, pc.chunk_size, ref.action),
            action_is_pad = lr.zeros(b, pc.chunk_size, { dtype = "bool" }) }
else
  local n = pc.n_obs_steps
  batch = { ["observation.state"] = lr.randn(b, n, ref.state), ["observation.images.top"] = lr.randn(b, n, 3, h, w),
            action = lr.randn(b, pc.horizon, ref.action), action_is_pad = lr.zeros(b, pc.horizon, { dtype = "bool" }) }
end
if cfg.device ~= "cpu" then
  for k, v in pairs(batch) do batch[k] = v:to(cfg.device) end
end

-- The preset as lerobot-train builds it (the same as recipes/lib/policy_training.lua).
local options = policy:optimizer_preset()
local kind, clip = options.type, options.grad_clip_norm
options.type, options.grad_clip_norm = nil, nil
local opt = lr.optim[kind](policy, options)
policy, opt = acc:prepare(policy, opt)
local ema = cfg.ema == "on" and lr.optim.ema(policy, opt, { enable = true }, acc) or nil

local loss
local phases = { forward = 0, backward = 0, optimizer = 0 }
local function step()
  if cfg.cuda_graph == "on" then
    loss = acc:train_step(policy, opt, batch, clip)
    return
  end
  local t0 = lr.clock()
  loss = policy:forward(batch)
  local t1 = lr.clock()
  acc:backward(loss)
  local t2 = lr.clock()
  acc:clip_grad_norm(clip)
  opt:step()
  opt:zero_grad()
  local t3 = lr.clock()
  phases.forward, phases.backward = phases.forward + t1 - t0, phases.backward + t2 - t1
  phases.optimizer = phases.optimizer + t3 - t2
end
for _ = 1, cfg.warmup do step() end
loss:item()  -- synchronizes a GPU run
phases = { forward = 0, backward = 0, optimizer = 0 }
local start, cpu_start = lr.clock(), os.clock()
local fastest = math.huge  -- the least-disturbed step on a shared machine (a GPU run queues steps: read the mean)
for _ = 1, cfg.steps do
  local t = lr.clock()
  step()
  fastest = math.min(fastest, lr.clock() - t)
end
local last = loss:item()
local elapsed, cpu = lr.clock() - start, os.clock() - cpu_start
local graph = cfg.cuda_graph == "on" and string.format(", cuda graph %s", acc.cuda_graph) or ""
print(string.format("lrhost %s step: batch %d, image %dx%d, threads %d, device %s, fast paths %s, tf32 %s%s%s, %d params, %s: "
                    .. "%.1f ms/step (mean of %d after %d warm-up; fastest %.1f; process CPU %.1f ms/step; last loss %.4f); "
                    .. "forward %.1f, backward %.1f, optimizer %.1f ms", cfg.policy, b, h, w, lr.num_threads(),
                    acc.device, cfg.fast_paths, cfg.tf32, graph, ema and string.format(", ema (step %d)", ema:step()) or "",
                    policy:num_parameters(), kind, 1000 * elapsed / cfg.steps, cfg.steps,
                    cfg.warmup, 1000 * fastest, 1000 * cpu / cfg.steps, last, 1000 * phases.forward / cfg.steps,
                    1000 * phases.backward / cfg.steps, 1000 * phases.optimizer / cfg.steps))
if cfg.profile ~= "" then
  lr.profile(cfg.profile, step)
  print("profiler trace of one more step: " .. cfg.profile)
end
