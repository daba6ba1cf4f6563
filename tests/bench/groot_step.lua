-- GR00T N1.7 training-step benchmark, lrhost side: the `groot` policy built at the geometry of a geometry
-- folder (geometry=DIR: config.json = the GR00TN17Config, backbone_config.json = the Qwen3-VL config,
-- processor_config.json, and the tokenizer / image processor files; recipes/assets/groot_tiny, or the mid
-- folder `groot_step.py geometry mid DIR` writes), random weights (from scratch), fp32 (use_bf16 = false:
-- LeRobot's default true runs CPU autocast, and so does lrhost's), the default tuning (backbone frozen and
-- in eval, action head trained). Features: one camera observation.images.top [3, H, W] (image=HxW),
-- observation.state [6], action [6], chunk_size = n_action_steps = the model's action horizon,
-- max_state_dim / max_action_dim = the model's.
-- The batch (batch=FILE) is LeRobot's preprocessor output that its twin groot_step.py --write-batch saved
-- (GR00T's pack and VLM-encode steps on a random raw batch: chat prompt, Qwen2VL pixels, min/max-normalized
-- state and action), so both sides step on the same tensors; LeRobot's flat pixel_values (B·patches, D) /
-- image_grid_thw (B, 3) get the leading batch dimension lrhost's processor gives them (one camera). Per
-- step what lerobot-train's update_policy does: forward (train mode: dropout and state dropout drawn),
-- backward, clip_grad_norm(grad_clip_norm = 1), AdamW step with the policy's preset (two weight-decay
-- groups), zero_grad. Prints the median step time in seconds of `steps` timed steps after `warmup` (and the
-- fastest, the slowest, the mean, the process CPU time per step), then the median of each phase.
-- scripts/bench groot runs both sides.
--   lrhost tests/bench/groot_step.lua --threads 2 geometry=DIR batch=FILE [image=40x56] [steps=10]
--          [warmup=2] [profile=trace.json]
-- profile=PATH runs one more step under the profiler (tests/bench/trace_ops.py sums it per operator).
local lr = require "lrhost"
local cfg = lr.config { geometry = "", batch = "", image = "40x56", steps = 10, warmup = 2, seed = 0, profile = "" }
assert(cfg.geometry ~= "", "geometry= (a GR00T geometry folder) is required")
assert(cfg.batch ~= "", "batch= (the processed batch groot_step.py --write-batch saved) is required")
local h, w = cfg.image:match("^(%d+)x(%d+)$")
assert(h, "image must be HxW, got '" .. cfg.image .. "'")
h, w = tonumber(h), tonumber(w)

local model = lr.read_json(cfg.geometry .. "/config.json")
local chunk = model.action_horizon

lr.manual_seed(cfg.seed)
local batch = lr.load_safetensors(cfg.batch)
local b = batch.input_ids:size(0)
batch.pixel_values = batch.pixel_values:reshape(b, -1, batch.pixel_values:size(1))
batch.image_grid_thw = batch.image_grid_thw:reshape(b, -1, 3)
local features = { inputs = { ["observation.state"] = { 6 }, ["observation.images.top"] = { 3, h, w } },
                   outputs = { action = { 6 } } }
local t0 = lr.clock()
local policy = lr.policy.new({ type = "groot", geometry = cfg.geometry, tokenizer_name = cfg.geometry,
                               chunk_size = chunk, n_action_steps = chunk, max_state_dim = model.max_state_dim,
                               max_action_dim = model.max_action_dim, use_bf16 = false }, features)
local built = lr.clock() - t0
local shapes = {}
for _, k in ipairs { "input_ids", "pixel_values", "image_grid_thw", "state", "action" } do
  local t = batch[k]
  local dims = {}
  for d, n in ipairs(t.shape) do dims[d] = tostring(n) end
  table.insert(shapes, k .. " (" .. table.concat(dims, ",") .. ")")
end

local options = policy:optimizer_preset()
local kind, clip = options.type, options.grad_clip_norm
options.type, options.grad_clip_norm = nil, nil
local opt = lr.optim[kind](policy, options)
policy:train()

local loss
local phases = { forward = {}, backward = {}, optimizer = {} }
local function step(record)
  local t0 = lr.clock()
  loss = policy:forward(batch)
  local t1 = lr.clock()
  loss:backward()
  local t2 = lr.clock()
  opt:clip_grad_norm(clip)
  opt:step()
  opt:zero_grad()
  if record then
    local t3 = lr.clock()
    table.insert(phases.forward, t1 - t0)
    table.insert(phases.backward, t2 - t1)
    table.insert(phases.optimizer, t3 - t2)
  end
end
local function median_of(values)
  local sorted = { unpack(values) }
  table.sort(sorted)
  local n = #sorted
  return n % 2 == 1 and sorted[(n + 1) / 2] or (sorted[n / 2] + sorted[n / 2 + 1]) / 2, sorted[1], sorted[n]
end
for _ = 1, cfg.warmup do step() end
local times = {}
local cpu_start = os.clock()
for i = 1, cfg.steps do
  local s = lr.clock()
  step(true)
  times[i] = lr.clock() - s
end
local cpu = os.clock() - cpu_start
local median, best, worst = median_of(times)
local sum = 0
for _, t in ipairs(times) do sum = sum + t end
local params, trainable = 0, 0
for _, row in ipairs(policy:weight_table()) do
  if row.parameter then
    params = params + row.numel
    if row.trainable then trainable = trainable + row.numel end
  end
end
print("lrhost groot batch: " .. table.concat(shapes, ", "))
print(string.format("lrhost groot step: %s (%d params, %d trainable), batch %d, image %dx%d, chunk %d, threads %d, "
                    .. "fp32: median %.4f s/step (best %.4f, worst %.4f, mean %.4f of %d after %d warm-up; process "
                    .. "CPU %.4f s/step; last loss %.4f)  [built in %.1f s]",
                    cfg.geometry:match("[^/]+$") or cfg.geometry, params, trainable, b, h, w, chunk,
                    lr.num_threads(), median, best, worst, sum / #times, cfg.steps, cfg.warmup, cpu / cfg.steps,
                    loss:item(), built))
print(string.format("lrhost groot phases (median s): forward %.4f, backward %.4f, optimizer (clip + AdamW + "
                    .. "zero_grad) %.4f", median_of(phases.forward), median_of(phases.backward),
                    median_of(phases.optimizer)))
if cfg.profile ~= "" then
  lr.profile(cfg.profile, step)
  print("profiler trace of one more step: " .. cfg.profile)
end
