-- FSDP equivalence: after `steps` optimizer steps, FSDP (ZeRO-3, ZeRO-2 or hybrid) on N ranks gives
-- the same parameters as DDP on the same N ranks and as one process stepping on the whole global
-- batch (N ranks x micro-batch b x `accum` micro-steps), with AdamW and optionally clipping.
-- Every rank trains an FSDP copy and a DDP copy (two accelerators share the process group); rank 0
-- also trains the single-process reference. Full parameters come from policy:state_dict(), which
-- gathers the shards (a collective). policy=mlp (every linear layer a unit, no root unit) or
-- policy=act (a small ACT on random batches: encoder/decoder layers are units, the backbone,
-- projections and heads form the root unit; dropout 0 and no VAE so a step is deterministic), or
-- policy=diffusion (residual blocks are units), or policy=smolvla (the decoder layers and the vision
-- tower are units; the frozen VLM is sharded too, without gradients or optimizer state), or policy=pi0 /
-- pi05 (the Gemma layers, gathered in pairs, and the vision tower are units; gradient_checkpointing=true),
-- or policy=groot (the Qwen3-VL vision blocks and text layers and the diffusers blocks are units).
-- Tolerance, derived from the arithmetic of this very run rather than from one machine's observed
-- difference: see `rounding_tolerance` below. Elementwise |fsdp - reference| <= rtol |reference| +
-- atol_T with rtol 1e-5 and, per tensor T, atol_T = 2 x the largest difference between three valid
-- fp32 runs of the same steps (DDP, one process, one process row by row). Diffusion (no one-process
-- reference: per-rank noise draws) and an explicit atol=... (bf16) use a fixed atol instead.
-- Also checks the ZeRO-3 memory bound: persistent bytes per rank <= total / N + the largest unit.
local lr = require "lrhost"
local cfg = lr.config { policy = "mlp", global_batch = 12, steps = 3, accum = 1, clip = 0.0, seed = 7,
                        dp_shard = -1, dp_replicate = 1, reshard_after_forward = true, rtol = 1e-5, atol = -1.0,
                        optimizer = "adamw", mixed_precision = "no", wrap_modules = "",
                        single_rtol = -1.0, single_atol = -1.0,  -- vs one process; -1: rtol / atol
                        gradient_checkpointing = false }  -- smolvla, pi0, pi05
-- atol -1: derived per tensor from valid fp32 runs (rounding_tolerance below); diffusion, which has
-- no one-process run, then uses 1e-7.

local function accelerator(parallelism, fsdp)
  return lr.accelerator { parallelism = parallelism,
                          accelerator = { gradient_accumulation_steps = cfg.accum, mixed_precision = cfg.mixed_precision,
                                          fsdp = fsdp } }
end
local acc = accelerator({ dp_shard = cfg.dp_shard, dp_replicate = cfg.dp_replicate },
                        { reshard_after_forward = cfg.reshard_after_forward, wrap_modules = cfg.wrap_modules })
local ddp = accelerator({ dp_shard = 1, dp_replicate = 1 }, nil)
local n, r = acc.world_size, acc.rank
local per_step = cfg.global_batch
assert(per_step % (n * cfg.accum) == 0, "global_batch must divide by ranks x accum")
local b = per_step / (n * cfg.accum)

-- make_policy() builds identical initial weights on every call; batch(first, count) gives rows
-- [first, first + count) of the run's data.
local make_policy, batch
if cfg.policy == "mlp" then
  lr.manual_seed(123)
  local X = lr.randn(cfg.steps * per_step, 5)
  local Y = lr.randn(cfg.steps * per_step, 3)
  -- Row counts 13 and 7 do not divide by 2, 3 or 4 ranks: shards are padded.
  local policy_cfg = { type = "mlp", input_dim = 5, output_dim = 3, hidden_dims = { 13, 7 }, input_key = "x",
                       target_key = "y" }
  make_policy = function()
    lr.manual_seed(cfg.seed)
    return lr.policy.new(policy_cfg)
  end
  batch = function(first, count) return { x = X:narrow(0, first, count), y = Y:narrow(0, first, count) } end
elseif cfg.policy == "act" or cfg.policy == "diffusion" then
  -- Random normalized batches for a 2-D state, one 3x64x64 camera and a 2-D action (no dataset, so
  -- this also runs on machines built without FFmpeg).
  local features = { inputs = { ["observation.state"] = { 2 }, ["observation.images.top"] = { 3, 64, 64 } },
                     outputs = { action = { 2 } } }
  local policy_cfg = cfg.policy == "act"
    and lr.policy.defaults("act", { chunk_size = 4, n_action_steps = 4, dim_model = 32, n_heads = 4,
                                    dim_feedforward = 48, n_encoder_layers = 2, n_decoder_layers = 1,
                                    use_vae = false, dropout = 0.0 })
    or lr.policy.defaults("diffusion", { down_dims = { 32, 64 }, diffusion_step_embed_dim = 16, horizon = 8,
                                         n_action_steps = 4, noise_scheduler_type = "DDIM", num_inference_steps = 3,
                                         crop_shape = { 56, 56 } })
  make_policy = function()
    lr.manual_seed(cfg.seed)
    return lr.policy.new(policy_cfg, features)
  end
  local pc = make_policy():config()
  local rows = cfg.steps * per_step
  lr.manual_seed(123)
  local all
  if cfg.policy == "act" then
    all = { ["observation.state"] = lr.randn(rows, 2), ["observation.images.top"] = lr.randn(rows, 3, 64, 64),
            action = lr.randn(rows, pc.chunk_size, 2), action_is_pad = lr.zeros(rows, pc.chunk_size, { dtype = "bool" }) }
  else
    local n = pc.n_obs_steps
    all = { ["observation.state"] = lr.randn(rows, n, 2), ["observation.images.top"] = lr.randn(rows, n, 3, 64, 64),
            action = lr.randn(rows, pc.horizon, 2), action_is_pad = lr.zeros(rows, pc.horizon, { dtype = "bool" }) }
  end
  batch = function(first, count)
    local slice = {}
    for key, value in pairs(all) do slice[key] = value:narrow(0, first, count) end
    return slice
  end
elseif cfg.policy == "smolvla" then
  -- A tiny SmolVLA on the VLM folder shipped for the CPU recipe: the decoder layers and the vision
  -- tower are units, the heads and embeddings the root unit; the frozen VLM is sharded too. Batches
  -- carry language tokens and the flow-matching noise and time, so every run sees the same inputs.
  local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
  local features = { inputs = { ["observation.state"] = { 3 }, ["observation.images.top"] = { 3, 32, 32 } },
                     outputs = { action = { 2 } } }
  local policy_cfg = lr.policy.defaults("smolvla", { vlm_model_name = here .. "/../../recipes/assets/smolvla_tiny_vlm",
                                                     chunk_size = 4, n_action_steps = 4, num_vlm_layers = 4,
                                                     resize_imgs_with_padding = { 64, 64 },
                                                     gradient_checkpointing = cfg.gradient_checkpointing })
  make_policy = function()
    lr.manual_seed(cfg.seed)
    return lr.policy.new(policy_cfg, features)
  end
  local rows = cfg.steps * per_step
  lr.manual_seed(123)
  local all = { ["observation.state"] = lr.randn(rows, 3), ["observation.images.top"] = lr.rand(rows, 3, 32, 32),
                ["observation.language.tokens"] = lr.randint(0, 500, { rows, 6 }),
                ["observation.language.attention_mask"] = lr.ones(rows, 6, { dtype = "bool" }),
                action = lr.randn(rows, 4, 2), action_is_pad = lr.zeros(rows, 4, { dtype = "bool" }),
                noise = lr.randn(rows, 4, 32), time = lr.rand(rows) * 0.9 + 0.05 }
  batch = function(first, count)
    local slice = {}
    for key, value in pairs(all) do slice[key] = value:narrow(0, first, count) end
    return slice
  end
elseif cfg.policy == "pi0" or cfg.policy == "pi05" then
  -- A tiny pi0 / pi05 on the geometry and tokenizer shipped for the CPU recipes: the Gemma layers
  -- (gathered in VLM/expert pairs) and the vision tower are units, embeddings, dead heads and
  -- projections the root unit. Eight tensors never get a gradient (LeRobot's dead lm_heads and the
  -- last VLM layer's unused half): no update and no weight decay under FSDP either. Batches carry
  -- language tokens and the flow-matching noise and time; gradient_checkpointing=true recomputes each
  -- layer pair inside its units' hooks.
  local features = { inputs = { ["observation.state"] = { 3 }, ["observation.images.top"] = { 3, 24, 40 } },
                     outputs = { action = { 2 } } }
  local policy_cfg = lr.policy.defaults(cfg.policy, { geometry = "lrhost/pi_tiny", tokenizer_name = "lrhost/pi_tiny",
                                                      chunk_size = 4, n_action_steps = 4, image_resolution = { 32, 32 },
                                                      max_state_dim = 8, max_action_dim = 8, empty_cameras = 1,
                                                      gradient_checkpointing = cfg.gradient_checkpointing })
  make_policy = function()
    lr.manual_seed(cfg.seed)
    return lr.policy.new(policy_cfg, features)
  end
  local rows = cfg.steps * per_step
  lr.manual_seed(123)
  local all = { ["observation.state"] = lr.randn(rows, 3), ["observation.images.top"] = lr.rand(rows, 3, 24, 40),
                ["observation.language.tokens"] = lr.randint(0, 700, { rows, 6 }),
                ["observation.language.attention_mask"] = lr.ones(rows, 6, { dtype = "bool" }),
                action = lr.randn(rows, 4, 2), noise = lr.randn(rows, 4, 8), time = lr.rand(rows) * 0.9 + 0.05 }
  batch = function(first, count)
    local slice = {}
    for key, value in pairs(all) do slice[key] = value:narrow(0, first, count) end
    return slice
  end
elseif cfg.policy == "groot" then
  -- A tiny GR00T on the geometry and tokenizer shipped for the CPU recipe: the vision blocks, text layers
  -- and the vl_self_attention and DiT blocks are units; the frozen backbone is sharded too, without
  -- gradients or optimizer state. Batches are processed ones (the prompt with one camera's 4 merged
  -- image tokens, the ids of the shipped tokenizer's specials) with the flow-matching noise and time;
  -- the policy runs in eval mode, so no dropout draws differ between runs.
  local features = { inputs = { ["observation.state"] = { 3 }, ["observation.images.top"] = { 3, 32, 32 } },
                     outputs = { action = { 2 } } }
  local policy_cfg = lr.policy.defaults("groot", { geometry = "lrhost/groot_tiny", tokenizer_name = "lrhost/groot_tiny",
                                                   chunk_size = 8, n_action_steps = 8, max_state_dim = 16,
                                                   max_action_dim = 16, use_bf16 = false,
                                                   gradient_checkpointing = cfg.gradient_checkpointing })
  make_policy = function()
    lr.manual_seed(cfg.seed)
    local policy = lr.policy.new(policy_cfg, features)
    policy:eval()
    return policy
  end
  local rows = cfg.steps * per_step
  lr.manual_seed(123)
  -- <|im_start|> "u" "s" <|vision_start|> 4 x <|image_pad|> <|vision_end|> three text ids <|im_end|>
  local ones = lr.ones(rows, 1, { dtype = "int64" })
  local ids = lr.cat({ ones * 301, lr.randint(0, 300, { rows, 2 }), ones * 303, lr.ones(rows, 4, { dtype = "int64" }) * 305,
                       ones * 304, lr.randint(0, 300, { rows, 3 }), ones * 302 }, 1)
  local action_mask = lr.zeros(rows, 8, 16)
  action_mask:narrow(2, 0, 2):fill_(1)
  local all = { input_ids = ids, attention_mask = lr.ones(rows, ids.shape[2], { dtype = "int64" }),
                pixel_values = lr.randn(rows, 16, 384), image_grid_thw = (lr.ones(rows, 1, 3, { dtype = "int64" }) *
                  lr.tensor({ 1, 4, 4 }, { dtype = "int64" })),
                state = lr.rand(rows, 1, 16) * 2 - 1, action = (lr.rand(rows, 8, 16) * 2 - 1) * action_mask,
                action_mask = action_mask, embodiment_id = lr.ones(rows, { dtype = "int32" }) * 10,
                noise = lr.randn(rows, 8, 16), time = lr.rand(rows) * 0.9 + 0.05 }
  batch = function(first, count)
    local slice = {}
    for key, value in pairs(all) do slice[key] = value:narrow(0, first, count) end
    return slice
  end
else
  error("policy must be mlp, act, diffusion, smolvla, pi0, pi05 or groot, got " .. tostring(cfg.policy))
end

-- Returns the rank's persistent memory right after the last optimizer step (gradients still held).
-- ACT has parameters whose gradient is zero in exact arithmetic (the key bias of attention):
-- Adam would turn their rounding noise into full-size updates, so the ACT cases use SGD.
local function make_optimizer(policy)
  if cfg.optimizer == "sgd" then return lr.optim.sgd(policy, { lr = 0.05, momentum = 0.9, weight_decay = 0.01 }) end
  return lr.optim.adamw(policy, { lr = 1e-2, weight_decay = 0.1 })
end

local function train(a, policy)
  local opt = make_optimizer(policy)
  a:prepare(policy, opt)
  local memory
  for step = 0, cfg.steps - 1 do
    for micro = 0, cfg.accum - 1 do
      local first = step * per_step + (micro * n + r) * b
      local loss = policy:forward(a:to_device(batch(first, b)))
      a:backward(loss)
      if cfg.clip > 0 then a:clip_grad_norm(cfg.clip) end
      assert(opt:step() == (micro == cfg.accum - 1), "optimizer steps only at the accumulation boundary")
      memory = a:memory_stats(opt)
      opt:zero_grad()
    end
  end
  return memory
end

-- Both runs draw the same random numbers on a rank (Diffusion's noise and timesteps), so FSDP and
-- DDP see identical inputs; one process on the global batch would draw different ones, so the
-- Diffusion case compares with DDP only.
local sharded = make_policy()
lr.manual_seed(cfg.seed + 1 + r)
local mem = train(acc, sharded)
local replicated = make_policy()
lr.manual_seed(cfg.seed + 1 + r)
train(ddp, replicated)

-- Elementwise |got - want| <= atol + rtol * |want| (torch.allclose); `atol` is a number or a table of
-- one per tensor name. Returns the largest |got - want|.
local function worst_difference(got, want, what, rtol, atol)
  local worst = 0
  for name, p in pairs(want) do
    assert(got[name], what .. " lacks " .. name)
    local bound = type(atol) == "table" and atol[name] or atol
    local diff = (got[name]:cpu():double() - p:cpu():double()):abs()
    local excess = (diff - p:cpu():double():abs() * rtol):max():item()
    worst = math.max(worst, diff:max():item())
    if excess > bound then
      error(string.format("%s: %s differs by up to %.3g (rtol %.1g, atol %.3g)", what, name, diff:max():item(), rtol,
                          bound))
    end
  end
  return worst
end

-- Trains a fresh policy in one process on the whole global batch of every step, on the
-- accelerator's device (so a GPU run compares like with like: cuDNN's TF32 convolutions). With
-- `rows`, each step's batch goes through in micro-batches of that many rows, their losses scaled
-- by rows / global batch and gradients accumulated: the same step, summed in another order.
local function train_one_process(rows)
  local policy = make_policy():to(acc.device)
  local opt = make_optimizer(policy)
  local micro = rows or per_step
  for step = 0, cfg.steps - 1 do
    for first = step * per_step, (step + 1) * per_step - 1, micro do
      local loss = policy:forward(acc:to_device(batch(first, micro)))
      if micro < per_step then loss = loss * (micro / per_step) end
      loss:backward()
    end
    if cfg.clip > 0 then opt:clip_grad_norm(cfg.clip) end
    opt:step()
    opt:zero_grad()
  end
  return policy
end

-- The tolerance, and why it holds. FSDP, DDP and one process take the same steps, which in exact
-- arithmetic end at the same parameters x*. Each fp32 run rounds every sum in its own order (batch
-- split across ranks and micro-steps, all-reduce or reduce-scatter, sharded or whole clipping norms,
-- buffers aligned differently for the vectorised kernels), and each order is as valid as any other:
-- every valid run lands within some E_T of x* for tensor T, E_T being the size of fp32 rounding
-- error after these steps on this machine (its kernels, its vector width); so any two valid runs,
-- FSDP and DDP included, are within 2 E_T of each other. E_T is read off three valid fp32 runs
-- that reorder every sum: the DDP copy, one process on the whole batch, and one process one row
-- at a time. Their largest pairwise difference S_T is a difference of two rounding errors, about
-- sqrt(2) E_T for independent ones and at least E_T unless two runs happen to round alike, so
-- atol_T = 2 S_T covers 2 E_T. (ACT builds its latent in float32, so a float64 run of x* is not
-- available for every policy; the spread of valid orders is.) A real FSDP fault (a gradient not
-- averaged, a stale shard, a missed clip) moves parameters far more than rounding and fails.
-- Guard: if the reference runs differ by more than 1e-4 of the largest parameter, they did not
-- take the same steps and a derived tolerance would mean nothing.
local function rounding_tolerance(runs)
  local tolerance, largest_spread, largest_value = {}, 0, 0
  for name, x in pairs(runs[1]) do
    local spread = 0
    for i = 1, #runs do
      for j = i + 1, #runs do
        spread = math.max(spread, (runs[i][name]:cpu():double() - runs[j][name]:cpu():double()):abs():max():item())
      end
    end
    tolerance[name] = 2 * spread
    largest_spread = math.max(largest_spread, spread)
    largest_value = math.max(largest_value, x:cpu():double():abs():max():item())
  end
  if largest_spread > 1e-4 * largest_value then
    error(string.format("the reference runs differ by %.3g (largest value %.3g): they did not take the same steps",
                        largest_spread, largest_value))
  end
  return tolerance
end

local full = sharded:state_dict()  -- gathered from every rank's shards
local ddp_state = replicated:state_dict()

-- Full state dict round trip: every rank calls save_pretrained (a gather), rank 0 writes a
-- LeRobot-format folder that one process loads back exactly.
local saved_dir = lr.run_dir() .. "/fsdp_pretrained"
sharded:save_pretrained(saved_dir)
acc:wait_for_everyone()
if r == 0 then
  local loaded = lr.policy.load(saved_dir):state_dict()
  local exact = worst_difference(loaded, full, "saved full state dict", 0, 0)
  assert(exact == 0, "the saved full state dict must load back bit for bit")
end

-- Inference through the sharded policy (root and units gathered under no_grad, then resharded), on
-- rank 0's inputs; compared below.
local chunk_inputs, fsdp_chunk, ddp_chunk
if cfg.policy ~= "mlp" then
  lr.manual_seed(cfg.seed)
  sharded:eval()
  replicated:eval()
  chunk_inputs = acc:to_device(batch(r * b, b))
  fsdp_chunk = sharded:predict_action_chunk(chunk_inputs)
  lr.manual_seed(cfg.seed)
  ddp_chunk = replicated:predict_action_chunk(chunk_inputs)
  sharded:train()
  replicated:train()
end

-- Memory: parameters + gradients + optimizer state this rank keeps between steps: fp32 parameter,
-- gradient and two Adam moments for trainable groups (16 bytes per element), the parameter alone
-- for frozen ones (SmolVLA's VLM), all sharded.
local units = acc:fsdp_units()
local total, largest, frozen_total, frozen_largest = 0, 0, 0, 0
for _, unit in ipairs(units) do
  if unit.frozen then
    local bytes = unit.numel * ((unit.dtype == "bfloat16" or unit.dtype == "float16") and 2 or 4)
    frozen_total = frozen_total + bytes
    frozen_largest = math.max(frozen_largest, bytes)
  else
    total = total + unit.numel
    largest = math.max(largest, unit.numel)
  end
end
local frozen_params = 0
for _, row in ipairs(replicated:weight_table()) do  -- unsharded sizes
  if row.parameter and not row.trainable then frozen_params = frozen_params + row.numel end
end
local in_frozen_groups = 0
for _, unit in ipairs(units) do if unit.frozen then in_frozen_groups = in_frozen_groups + unit.numel end end
assert(in_frozen_groups == frozen_params, string.format("frozen parameters outside FSDP's groups: %d of %d sharded",
                                                        in_frozen_groups, frozen_params))
-- Between steps every group, frozen ones included, is back to its shard: the gathered storage is freed.
local shard_bytes = 0
for _, unit in ipairs(units) do
  shard_bytes = shard_bytes + unit.shard_numel * ((unit.dtype == "bfloat16" or unit.dtype == "float16") and 2 or 4)
end
if mem.parameter_bytes ~= shard_bytes then
  error(string.format("rank %d holds %d bytes of parameters after the step, its shards are %d bytes: gathered "
                      .. "storage was not freed", r, mem.parameter_bytes, shard_bytes))
end
local persistent = mem.parameter_bytes + mem.gradient_bytes + mem.optimizer_bytes
local bound = 16 * (total / acc.world_size + largest) + frozen_total / acc.world_size + frozen_largest
if cfg.reshard_after_forward and cfg.dp_replicate == 1 and persistent > bound then
  error(string.format("ZeRO-3 memory: %d bytes of parameters, gradients and optimizer state on rank %d exceed "
                      .. "16 x (trainable/N + largest unit) + frozen/N + largest frozen group = %d bytes",
                      persistent, r, bound))
end

if r == 0 and cfg.policy == "diffusion" then
  -- No one-process run to derive a tolerance from: FSDP and DDP draw the same noise on a rank and,
  -- with 2 ranks and no accumulation, add the same two gradients (a + b is exact-order free), so
  -- they differ only where a kernel rounds differently on differently aligned buffers: atol 1e-7.
  local atol = cfg.atol >= 0 and cfg.atol or 1e-7
  local vs_ddp = worst_difference(full, ddp_state, "FSDP vs DDP", cfg.rtol, atol)
  worst_difference({ chunk = fsdp_chunk }, { chunk = ddp_chunk }, "FSDP vs DDP action chunk", cfg.rtol, atol)
  print(string.format("fsdp equivalence ok: %s, %s, %d ranks x %d rows x %d accum, %d steps, %d units; "
                      .. "largest difference vs ddp %.3g; rank 0 keeps %d of %d bytes", cfg.policy, acc.strategy, n, b,
                      cfg.accum, cfg.steps, #units, vs_ddp, persistent, 16 * total))
elseif r == 0 then
  local reference = train_one_process()
  local reference_state = reference:state_dict()
  local atol, chunk_atol = cfg.atol, cfg.atol
  if cfg.atol < 0 then
    local by_rows = train_one_process(1)
    atol = rounding_tolerance({ ddp_state, reference_state, by_rows:state_dict() })
    if chunk_inputs then
      -- The action chunk: the same bound over the outputs of the three valid sets of parameters.
      local chunks = { { chunk = ddp_chunk } }
      for _, policy in ipairs({ reference, by_rows }) do
        policy:eval()
        lr.manual_seed(cfg.seed)
        chunks[#chunks + 1] = { chunk = policy:predict_action_chunk(chunk_inputs) }
      end
      chunk_atol = rounding_tolerance(chunks).chunk
    end
  end
  local vs_ddp = worst_difference(full, ddp_state, "FSDP vs DDP", cfg.rtol, atol)
  if chunk_inputs then
    worst_difference({ chunk = fsdp_chunk }, { chunk = ddp_chunk }, "FSDP vs DDP action chunk", cfg.rtol, chunk_atol)
  end
  local vs_single = worst_difference(full, reference_state, "FSDP vs one process",
                                     cfg.single_rtol >= 0 and cfg.single_rtol or cfg.rtol,
                                     cfg.single_atol >= 0 and cfg.single_atol or atol)
  local largest_atol = atol
  if type(atol) == "table" then
    largest_atol = 0
    for _, value in pairs(atol) do largest_atol = math.max(largest_atol, value) end
  end
  print(string.format("fsdp equivalence ok: %s, %s, %d ranks x %d rows x %d accum, %d steps, %d units; "
                      .. "largest difference vs ddp %.3g, vs one process %.3g (atol up to %.3g); rank 0 keeps %d "
                      .. "of %d bytes", cfg.policy, acc.strategy, n, b, cfg.accum, cfg.steps, #units, vs_ddp, vs_single,
                      largest_atol, persistent, 16 * total))
end
acc:wait_for_everyone()
