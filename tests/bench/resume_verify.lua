-- What verifying checksums in resume's reading pass costs (issue 34's "verification cost"): one
-- training step (so the AdamW state exists), one full training checkpoint, then `repeats` resumes of
-- it into the same policy and optimizer with its checksums.json, and `repeats` without it (the same
-- reads, nothing verified); the fastest of each. The difference is the verification; its rate is the bytes verified (every
-- file resume reads: model, optimizer, RNG, scheduler and JSON files) over that difference. The files
-- are in the page cache (just written), so this is the CPU cost of CRC32C, not the disk's.
-- policy=act: LeRobot's reference ACT (51.7 M weights, as tests/bench/checkpoint_io.lua);
-- policy=pi05: the tiny pi05 of recipes/assets/pi_tiny.
--   lrhost tests/bench/resume_verify.lua policy=act|pi05 [out=DIR] [repeats=10]
local lr = require "lrhost"
local cfg = lr.config { policy = "act", out = "", repeats = 10, steps = 1000 }
assert(cfg.policy == "act" or cfg.policy == "pi05", "policy must be act or pi05, got '" .. cfg.policy .. "'")
local out = cfg.out ~= "" and cfg.out or lr.run_dir()

lr.manual_seed(0)
local policy, batch
if cfg.policy == "act" then
  policy = lr.policy.new({ type = "act" }, {
    inputs = { ["observation.state"] = { 14 }, ["observation.images.top"] = { 3, 480, 640 } }, outputs = { action = { 14 } } })
  batch = { ["observation.state"] = lr.randn(2, 14), ["observation.images.top"] = lr.randn(2, 3, 96, 128),
            action = lr.randn(2, 100, 14), action_is_pad = lr.zeros(2, 100, { dtype = "bool" }) }
else
  policy = lr.policy.new({ type = "pi05", geometry = "lrhost/pi_tiny", tokenizer_name = "lrhost/pi_tiny",
                           image_resolution = { 32, 32 }, chunk_size = 4, n_action_steps = 4, tokenizer_max_length = 8 },
                         { inputs = { ["observation.state"] = { 6 }, ["observation.images.top"] = { 3, 32, 32 } },
                           outputs = { action = { 6 } } })
  local pc = policy:config()
  batch = { ["observation.state"] = lr.randn(2, 6), ["observation.images.top"] = lr.rand(2, 3, 32, 32),
            ["observation.language.tokens"] = lr.randint(0, 1024, { 2, 8 }),
            ["observation.language.attention_mask"] = lr.ones(2, 8, { dtype = "bool" }),
            action = lr.randn(2, 4, 6), action_is_pad = lr.zeros(2, 4, { dtype = "bool" }),
            noise = lr.randn(2, 4, pc.max_action_dim), time = lr.rand(2) * 0.9 + 0.05 }
end
local options = policy:optimizer_preset()
local kind = options.type
options.type, options.grad_clip_norm = nil, nil
local opt = lr.optim[kind](policy, options)
policy:forward(batch):backward()
opt:step()

local ckpt = lr.checkpoint(out, { policy = policy, optimizer = opt, config = cfg, total_steps = cfg.steps })
local dir = out .. "/checkpoints/" .. string.format("%06d", 1)
ckpt:save(1)

-- Every file resume reads is listed in checksums.json; all but the recipe-less run's own config copy.
local function file_bytes(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end
local manifest = lr.read_json(dir .. "/checksums.json")
local bytes = 0
for name, entry in pairs(manifest.files) do
  if name ~= "pretrained_model/train_config.json" then bytes = bytes + entry.bytes end
end

-- The fastest of `repeats` resumes: the least disturbed by other work on the machine.
local function best_resume_s()
  local best = math.huge
  for _ = 1, cfg.repeats do
    local resumer = lr.checkpoint(out, { policy = policy, optimizer = opt, config = cfg, total_steps = cfg.steps,
                                         resume = dir })
    local start = lr.clock()
    resumer:resume()
    best = math.min(best, lr.clock() - start)
  end
  return best
end
best_resume_s()  -- warm-up: page cache and allocator
local verified = best_resume_s()
assert(os.rename(dir .. "/checksums.json", out .. "/checksums.json.aside"))
local unverified = best_resume_s()
assert(os.rename(out .. "/checksums.json.aside", dir .. "/checksums.json"))
local cost = verified - unverified
print(string.format("%s (%d weights): resume %.3f s verified, %.3f s unverified (best of %d); verification %.3f s "
                    .. "= %.1f%% of the verified resume, %.2f GB/s over %.1f MB (%s, %.1f MB model.safetensors)",
                    cfg.policy, policy:num_parameters(), verified, unverified, cfg.repeats, cost,
                    100 * cost / verified, cost > 0 and bytes / cost / 1e9 or 0 / 0, bytes / 1e6, dir,
                    file_bytes(dir .. "/pretrained_model/model.safetensors") / 1e6))
