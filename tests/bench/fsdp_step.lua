-- FSDP benchmark: ACT training steps through the accelerator under the strategy the overrides pick
-- (parallelism.dp_shard=1: DDP; -1: FSDP over every rank; accelerator.fsdp.reshard_after_forward:
-- ZeRO-3 or ZeRO-2; accelerator.mixed_precision), on a random normalized batch (14-D state, one
-- camera, LeRobot's default ACT unless policy.* overrides say otherwise). Rank 0 prints one line: the
-- strategy, ranks, parameters, mean ms/step after warm-up, this rank's persistent bytes (parameters,
-- gradients, optimizer state), and on CUDA the peak allocated and reserved memory during the timed
-- steps. trace=PATH writes a profiler trace of two more steps (Chrome trace JSON).
--   lrhost --nproc 2 --device cpu tests/bench/fsdp_step.lua --threads 1 parallelism.dp_shard=1
--   lrhost --nproc 2 --device cpu tests/bench/fsdp_step.lua --threads 1            (ZeRO-3)
--   lrhost --gpus 1 tests/bench/fsdp_step.lua image=480x640 accelerator.mixed_precision=bf16
--   lrhost --gpus 1 tests/bench/fsdp_step.lua policy.dim_model=1024 policy.n_encoder_layers=12 ...
local lr = require "lrhost"
local cfg = lr.config {
  batch_size = 8, steps = 5, warmup = 2, image = "96x128", seed = 0, trace = "",
  policy = lr.policy.defaults("act", {}),
  accelerator = { mixed_precision = "no", fsdp = { reshard_after_forward = true, wrap_modules = "" } },
  parallelism = { dp_shard = -1, dp_replicate = 1 },
}
local h, w = cfg.image:match("^(%d+)x(%d+)$")
assert(h, "image must be HxW, got '" .. cfg.image .. "'")
h, w = tonumber(h), tonumber(w)

local acc = lr.accelerator(cfg)
lr.manual_seed(cfg.seed)
local features = { inputs = { ["observation.state"] = { 14 }, ["observation.images.top"] = { 3, h, w } },
                   outputs = { action = { 14 } } }
local policy = lr.policy.new(cfg.policy, features)
local options = policy:optimizer_preset()
local clip = options.grad_clip_norm
options.type, options.grad_clip_norm = nil, nil
local opt = lr.optim.adamw(policy, options)
acc:prepare(policy, opt)
policy:train()

local b, chunk = cfg.batch_size, policy:config().chunk_size
local batch = acc:to_device { ["observation.state"] = lr.randn(b, 14), ["observation.images.top"] = lr.randn(b, 3, h, w),
                              action = lr.randn(b, chunk, 14), action_is_pad = lr.zeros(b, chunk, { dtype = "bool" }) }
local loss, mem
local function step()
  loss = policy:forward(batch)
  acc:backward(loss)
  acc:clip_grad_norm(clip)
  opt:step()
  mem = acc:memory_stats(opt)  -- gradients still held
  opt:zero_grad()
end
for _ = 1, cfg.warmup do step() end
loss:item()  -- waits for the GPU
acc:wait_for_everyone()
acc:reset_peak_memory()
local start = lr.clock()
for _ = 1, cfg.steps do step() end
loss:item()
acc:wait_for_everyone()
local ms = 1000 * (lr.clock() - start) / cfg.steps
local device = acc:device_memory()
if cfg.trace ~= "" then  -- every rank steps (collectives); rank r > 0 writes PATH.rank<r>
  local path = acc.rank == 0 and cfg.trace or cfg.trace .. ".rank" .. acc.rank
  lr.profile(path, function() step(); step(); loss:item() end)
end

local mib = function(bytes) return bytes / 2 ^ 20 end
if acc.is_main_process then
  print(string.format("fsdp step: %s, %d rank(s) on %s, mixed precision %s, %d params, batch %d, image %dx%d: "
                      .. "%.1f ms/step; rank 0 keeps parameters %.1f MiB, gradients %.1f MiB, optimizer %.1f MiB%s",
                      acc.strategy, acc.world_size, acc.device, acc.mixed_precision, policy:num_parameters(), b, h, w, ms,
                      mib(mem.parameter_bytes), mib(mem.gradient_bytes), mib(mem.optimizer_bytes),
                      device and string.format("; GPU peak allocated %.1f MiB, reserved %.1f MiB", mib(device.peak),
                                               mib(device.reserved)) or ""))
end
