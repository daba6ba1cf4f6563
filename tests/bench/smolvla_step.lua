-- SmolVLA training-step benchmark, lrhost side: the full-size policy (SmolVLM2-500M geometry, 16 VLM
-- layers, the 720-wide expert) built from the VLM folder `vlm` (config only; random weights), a random
-- already-preprocessed batch (cameras in [0, 1] of size image, 48 language tokens, 6-D state and
-- action, chunk 50), and per step what lerobot-train's update_policy does: forward, backward,
-- clip_grad_norm(10), AdamW step, zero_grad over the trainable parameters. With cache=true the
-- frozen vision tower's output comes from the vision feature cache (filled by the warm-up steps).
-- Prints ms/step (mean of `steps` after `warmup`), process CPU time, and on CUDA the peak memory;
-- also the inference latency of one predict_action_chunk (prefix + 10 Euler steps) with chunk=true.
-- Its twin is smolvla_step.py (LeRobot 0.6.1's SmolVLAPolicy on the same folder and batch).
--   lrhost tests/bench/smolvla_step.lua --threads 2 vlm=DIR [batch_size=1] [cameras=1] [image=480x640]
--          [steps=3] [warmup=1] [cache=true] [chunk=true] [mixed_precision=bf16]     (--gpus 1: on a GPU)
--          [profile=trace.json]   (one more step under the profiler; tests/bench/trace_ops.py sums it)
-- The VLM folder's config decides the dtypes exactly as for LeRobot (smolvla_oracle.py vlm DIR
-- --full-size: fp32; --dtype hub: text and expert bf16; scripts/bench writes the variants).
local lr = require "lrhost"
local cfg = lr.config { vlm = "", batch_size = 1, cameras = 1, image = "480x640", steps = 3, warmup = 1,
                        cache = false, chunk = false, seed = 0, mixed_precision = "no", vocab = 49152,
                        profile = "" }
assert(cfg.vlm ~= "", "vlm= (a SmolVLM folder with config.json) is required")
local h, w = cfg.image:match("^(%d+)x(%d+)$")
assert(h, "image must be HxW, got '" .. cfg.image .. "'")
h, w = tonumber(h), tonumber(w)

local acc = lr.accelerator { accelerator = { mixed_precision = cfg.mixed_precision } }
lr.manual_seed(cfg.seed)
local names = { "observation.images.camera1", "observation.images.camera2", "observation.images.camera3" }
local inputs = { ["observation.state"] = { 6 } }
for c = 1, cfg.cameras do inputs[names[c]] = { 3, h, w } end
local policy = lr.policy.new({ type = "smolvla", vlm_model_name = cfg.vlm, pad_language_to = "max_length",
                               cache_vision_features = cfg.cache },
                             { inputs = inputs, outputs = { action = { 6 } } })
local b = cfg.batch_size
local batch = { ["observation.state"] = lr.randn(b, 6), action = lr.randn(b, 50, 6),
                action_is_pad = lr.zeros(b, 50, { dtype = "bool" }),
                ["observation.language.tokens"] = lr.randint(0, cfg.vocab, { b, 48 }),
                ["observation.language.attention_mask"] = lr.ones(b, 48, { dtype = "bool" }),
                index = lr.arange(b) }
for c = 1, cfg.cameras do batch[names[c]] = lr.rand(b, 3, h, w) end
batch = acc:to_device(batch)
if cfg.cache then
  local dir = os.tmpname()
  os.remove(dir)
  policy:prepare_training { cache_dir = dir, num_frames = b, dataset_id = "bench" }
end

local options = policy:optimizer_preset()
local clip = options.grad_clip_norm
options.type, options.grad_clip_norm = nil, nil
local opt = lr.optim.adamw(policy, options)
acc:prepare(policy, opt)
policy:train()

local loss
local function step()
  loss = policy:forward(batch)
  loss:backward()
  opt:clip_grad_norm(clip)
  opt:step()
  opt:zero_grad()
end
for _ = 1, cfg.warmup do step() end
loss:item()  -- synchronizes a GPU run
acc:reset_peak_memory()
local start, cpu_start = lr.clock(), os.clock()
for _ = 1, cfg.steps do step() end
local last = loss:item()
local elapsed, cpu = lr.clock() - start, os.clock() - cpu_start
local device = acc:device_memory()
local params, trainable = 0, 0
for _, row in ipairs(policy:weight_table()) do
  if row.parameter then
    params = params + row.numel
    if row.trainable then trainable = trainable + row.numel end
  end
end
print(string.format("lrhost smolvla step: batch %d, %d camera(s) %dx%d, threads %d, device %s, %s, cache %s, %d params "
                    .. "(%d trainable): %.1f ms/step (mean of %d after %d warm-up; process CPU %.1f ms/step; "
                    .. "last loss %.4f)%s", b, cfg.cameras, h, w, lr.num_threads(), acc.device, cfg.mixed_precision,
                    tostring(cfg.cache), params, trainable, 1000 * elapsed / cfg.steps, cfg.steps, cfg.warmup,
                    1000 * cpu / cfg.steps, last,
                    device and string.format("; GPU peak allocated %.0f MiB", device.peak / 2 ^ 20) or ""))
if cfg.profile ~= "" then
  lr.profile(cfg.profile, step)
  print("profiler trace of one more step: " .. cfg.profile)
end
if cfg.chunk then
  policy:eval()
  local obs = {}
  for k, v in pairs(batch) do
    if k:find("^observation%.") then obs[k] = v end
  end
  lr.no_grad(function()
    policy:predict_action_chunk(obs)  -- warm-up
    local t0 = lr.clock()
    local chunk = policy:predict_action_chunk(obs)
    chunk:sum():item()
    print(string.format("lrhost smolvla inference: batch %d, %d camera(s), %.1f ms per predict_action_chunk "
                        .. "(prefix + %d Euler steps)", b, cfg.cameras, 1000 * (lr.clock() - t0),
                        policy:config().num_steps))
  end)
end
