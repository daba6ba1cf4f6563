-- pi0 / pi05 training-step benchmark, lrhost side: the policy built at the geometry of a geometry.json
-- (geometry=FILE; format in host/policy/pi/pi_geometry.hpp), random weights, fp32, no autocast.
-- Features: observation.state [6], one camera observation.images.top [3, R, R] at image_resolution R
-- (so no resize runs), action [6]; chunk_size `chunk`, tokenizer_max_length `tokens` (the tokenizer,
-- lrhost/pi_tiny, is not used: the batch is already tokenized). A random already-preprocessed batch of
-- batch_size (camera in [0, 1], tokens with an all-true bool mask, normalized state and action) with a
-- fixed noise (B, chunk, max_action_dim) and time (B,) in the batch, and per step what lerobot-train's
-- update_policy does: forward, backward, clip_grad_norm(grad_clip_norm = 1), AdamW step with the
-- policy's preset, zero_grad. Prints the median step time in seconds of `steps` timed steps after
-- `warmup` (and the fastest, the mean and the process CPU time per step), then the median of each phase.
-- Its twin is pi_step.py (LeRobot 0.6.1's PI0Policy / PI05Policy, same geometry, config, batch and loop);
-- scripts/bench pi runs both.
--   lrhost tests/bench/pi_step.lua --threads 2 policy=pi05 geometry=FILE [image=224] [batch_size=1]
--          [chunk=50] [tokens=48] [steps=3] [warmup=1] [profile=trace.json] [lora=true]
-- lora=true: LoRA adapters with LeRobot's default targets (--peft.method_type=LORA) on the built
-- weights (saved to a temporary folder and loaded with policy.peft, as fine-tuning does): only the
-- adapters train.
-- profile=PATH runs one more step under the profiler (tests/bench/trace_ops.py sums it per operator).
local lr = require "lrhost"
local cfg = lr.config { policy = "pi05", geometry = "", image = 224, batch_size = 1, chunk = 50, tokens = 48,
                        steps = 3, warmup = 1, seed = 0, profile = "", lora = false }
assert(cfg.geometry ~= "", "geometry= (a geometry.json) is required")
assert(cfg.policy == "pi0" or cfg.policy == "pi05", "policy must be pi0 or pi05, got '" .. cfg.policy .. "'")

local geometry = lr.read_json(cfg.geometry)

lr.manual_seed(cfg.seed)
local r, b = cfg.image, cfg.batch_size
local features = { inputs = { ["observation.state"] = { 6 }, ["observation.images.top"] = { 3, r, r } },
                   outputs = { action = { 6 } } }
local t0 = lr.clock()
local policy = lr.policy.new({ type = cfg.policy, geometry = cfg.geometry, tokenizer_name = "lrhost/pi_tiny",
                               image_resolution = { r, r }, chunk_size = cfg.chunk, n_action_steps = cfg.chunk,
                               tokenizer_max_length = cfg.tokens }, features)
if cfg.lora then
  local dir = os.tmpname()
  os.remove(dir)
  policy:save_pretrained(dir)
  lr.manual_seed(cfg.seed)
  policy = lr.policy.load(dir, { config = { peft = { method_type = "LORA" } } })
  os.execute("rm -rf '" .. dir .. "'")
end
local built = lr.clock() - t0
local pc = policy:config()
local batch = { ["observation.state"] = lr.randn(b, 6), ["observation.images.top"] = lr.rand(b, 3, r, r),
                ["observation.language.tokens"] = lr.randint(0, geometry.vlm.vocab_size, { b, cfg.tokens }),
                ["observation.language.attention_mask"] = lr.ones(b, cfg.tokens, { dtype = "bool" }),
                action = lr.randn(b, cfg.chunk, 6), action_is_pad = lr.zeros(b, cfg.chunk, { dtype = "bool" }),
                noise = lr.randn(b, cfg.chunk, pc.max_action_dim), time = lr.rand(b) * 0.9 + 0.05 }

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
  return n % 2 == 1 and sorted[(n + 1) / 2] or (sorted[n / 2] + sorted[n / 2 + 1]) / 2, sorted[1]
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
local median, best = median_of(times)
local n = #times
local sum = 0
for _, t in ipairs(times) do sum = sum + t end
local params = 0
for _, row in ipairs(policy:weight_table()) do
  if row.parameter then params = params + row.numel end
end
local trainable = 0
for _, row in ipairs(policy:weight_table()) do
  if row.trainable then trainable = trainable + row.numel end
end
print(string.format("lrhost %s%s step: %s (%d params, %d trainable), batch %d, image %d, chunk %d, %d tokens, threads %d, fp32: "
                    .. "median %.4f s/step (best %.4f, mean %.4f of %d after %d warm-up; process CPU %.4f s/step; "
                    .. "last loss %.4f)  [built in %.1f s]", cfg.policy, cfg.lora and " LoRA" or "",
                    cfg.geometry:match("[^/]+/[^/]+$") or cfg.geometry, params, trainable, b, r,
                    cfg.chunk, cfg.tokens, lr.num_threads(), median, best, sum / n, cfg.steps, cfg.warmup,
                    cpu / cfg.steps, loss:item(), built))
print(string.format("lrhost %s phases (median s): forward %.4f, backward %.4f, optimizer (clip + AdamW + zero_grad) %.4f",
                    cfg.policy, median_of(phases.forward), median_of(phases.backward), median_of(phases.optimizer)))
if cfg.profile ~= "" then
  lr.profile(cfg.profile, step)
  print("profiler trace of one more step: " .. cfg.profile)
end
