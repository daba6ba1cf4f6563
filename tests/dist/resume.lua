-- Resume exactness: trains a policy on lr.default_dataset() for `steps` steps, saving every
-- `save_freq` steps. policy=mlp (the default): episodes 0-2, both normalizer steps in use, dropout
-- drawing from the global RNG, AdamW, a warmup + cosine schedule, gradient clipping, the real loader
-- crossing epochs; the default batch of 14 leaves a short last batch in every epoch (240 frames).
-- policy=smolvla: a tiny SmolVLA on the VLM folder vlm= (recipes/assets/smolvla_tiny_vlm; frozen
-- vision tower and VLM, trainable action expert; the camera, the state and the task of each frame
-- tokenized, 4-step action chunks) with the same optimizer, schedule and clipping, on episodes 0, 1,
-- 3 and 6 without the last 3 frames of each (drop_n_last_frames): 48 frames, so no short last batch
-- at 12 frames a step, and no padded action (SmolVLA divides its loss by the rank's count of valid
-- actions, so padded frames spread unevenly over the ranks would make the result depend on the rank
-- count). Its flow-matching noise and time come from fixed tables indexed by each frame's dataset
-- index instead of the per-rank RNG, so a sample gets the same ones whatever rank count and batch
-- split draws it; each run also checks that its frozen parameters end bit for bit where they started.
-- With stop_after = k a first run stops after saving step k (as if killed); `lrhost resume` then
-- continues it from the checkpoint. With kill_after = k, rank 0 of the first attempt kills itself
-- after saving step k, and the launcher's --max-restarts resumes the group (restart_resume.sh).
-- Rank 0 writes the final parameters and the per-step losses and learning rates to `result`;
-- compare = "a,b" checks two results against each other (tolerance 0: bit for bit; frozen
-- parameters always bit for bit). Driven by resume.sh, and by fsdp_resume.sh for FSDP runs resumed
-- at another rank count (mlp, smolvla and pi05). policy=pi05: a tiny pi05 on the shipped geometry
-- (recipes/assets/pi_tiny) with a frozen vision tower, the same data, noise and time tables as smolvla
-- (pi05 ignores action_is_pad, so padded chunks are excluded for the same reason). policy=groot: a tiny
-- GR00T on the shipped geometry (recipes/assets/groot_tiny), its backbone frozen, in eval mode (no dropout),
-- on episodes of one task (see below).
local lr = require "lrhost"
local cfg = lr.config {
  steps = 30, batch_size = 14, seed = 1000, resume = false, output_dir = "outputs/resume_test",
  save_freq = 10, keep_last = 0, stop_after = 0, result = "", compare = "", tolerance = 0.0, dropout = 0.1,
  save_async = false,  -- true: checkpoints written in the background (kill_chain.sh's async chain)
  kill_after = 0,  -- > 0: rank 0 of the first attempt dies by SIGKILL right after saving this step
  policy = "mlp",  -- or "smolvla", "pi05", "groot"
  hidden = 32,     -- mlp: the width of its two hidden layers (kill_chain.sh's async chain: larger, slower saves)
  vlm = "",        -- smolvla: the tiny VLM folder, an absolute path (`lrhost resume` runs a copy of this file)
  parallelism = { dp_shard = 1, dp_replicate = 1 },  -- dp_shard=-1: FSDP (fsdp_resume.sh)
}

if cfg.compare ~= "" then
  local a_file, b_file = cfg.compare:match("^([^,]+),([^,]+)$")
  local a, b = lr.load_safetensors(a_file), lr.load_safetensors(b_file)
  local params, steps, worst = 0, 0, 0
  for name, want in pairs(a) do
    local got = b[name]
    if name:match("^param/") then
      assert(got, name .. " is missing from " .. b_file)
      params = params + 1
    end
    if got then
      if name:match("^loss/") then steps = steps + 1 end
      local diff = (got - want):abs():max():item() / (want:abs():max():item() + 1e-30)
      local frozen_param = name:match("^param/") and a["frozen/" .. name:sub(7)] ~= nil
      if not frozen_param then worst = math.max(worst, diff) end
      local allowed = (frozen_param or name:match("^frozen/")) and 0 or cfg.tolerance
      if diff > allowed then
        error(string.format("%s%s differs: relative max diff %.3g > tolerance %.3g", frozen_param and "frozen " or "",
                            name, diff, allowed))
      end
    end
  end
  for name in pairs(b) do assert(a[name], name .. " is missing from " .. a_file) end
  local frozen = 0
  for name, initial in pairs(a) do
    local param = name:match("^frozen/(.*)$")
    if param then
      frozen = frozen + 1
      assert(a["param/" .. param]:equal(initial), "frozen " .. param .. " changed in " .. a_file)
    end
  end
  assert(params > 0 and steps > 0, "nothing to compare")
  print(string.format("resume matches: %d parameters%s, %d resumed steps (loss and lr), worst relative diff %.3g",
                      params, frozen > 0 and string.format(" (%d frozen, bit for bit)", frozen) or "", steps, worst))
  return
end

local acc = lr.accelerator(cfg)
local ds, policy, noise_table, time_table
if cfg.policy == "mlp" then
  lr.manual_seed(cfg.seed)
  ds = lr.dataset.lerobot { root = lr.default_dataset(), keys = { "observation.state", "action" },
                            episodes = { 0, 1, 2 } }
  policy = lr.policy.new({ type = "mlp", hidden_dims = { cfg.hidden, cfg.hidden }, dropout = cfg.dropout }, ds,
                         { normalization_mapping = { STATE = "MEAN_STD", ACTION = "MIN_MAX" } })
elseif cfg.policy == "smolvla" or cfg.policy == "pi05" or cfg.policy == "groot" then
  local root, episodes = lr.default_dataset(), { 0, 1, 3, 6 }
  -- GR00T's vl_self_attention has no mask (LeRobot's), so left padding makes a sample's output depend on
  -- its batch-mates' prompt lengths: episodes of one task ("... on the left", 48 frames in all) keep
  -- every prompt the same length, so a step is the same computation at any rank count.
  if cfg.policy == "groot" then episodes = { 1, 5, 8, 15 } end
  local plain = lr.dataset.lerobot { root = root, episodes = episodes }  -- features, stats and tasks
  lr.manual_seed(cfg.seed)
  if cfg.policy == "smolvla" then
    assert(cfg.vlm ~= "", "policy=smolvla needs vlm= (recipes/assets/smolvla_tiny_vlm as an absolute path)")
    policy = lr.policy.new(lr.policy.defaults("smolvla", {
      vlm_model_name = cfg.vlm, chunk_size = 4, n_action_steps = 4, num_vlm_layers = 4,
      resize_imgs_with_padding = { 64, 64 }, tokenizer_max_length = 8 }), plain)
  elseif cfg.policy == "groot" then
    -- The shipped tiny geometry; LeRobot's default tuning: the backbone frozen (bit for bit below), the
    -- action head trained.
    policy = lr.policy.new(lr.policy.defaults("groot", {
      geometry = "lrhost/groot_tiny", tokenizer_name = "lrhost/groot_tiny", chunk_size = 4, n_action_steps = 4,
      max_state_dim = 16, max_action_dim = 16, use_bf16 = false }), plain)
  else
    -- The shipped tiny geometry; a frozen vision tower (bit for bit below), the rest trained.
    policy = lr.policy.new(lr.policy.defaults("pi05", {
      geometry = "lrhost/pi_tiny", tokenizer_name = "lrhost/pi_tiny", chunk_size = 4, n_action_steps = 4,
      image_resolution = { 32, 32 }, max_state_dim = 8, max_action_dim = 8, tokenizer_max_length = 16,
      freeze_vision_encoder = true }), plain)
  end
  ds = lr.dataset.lerobot { root = root, episodes = episodes,
                            delta_timestamps = policy:delta_timestamps(plain:meta().fps) }
  -- Noise and time per dataset row, from their own seed (the same tables in every run and on every rank).
  local chunk, width = policy:config().chunk_size, policy:config().max_action_dim
  local rows = plain:meta().total_frames
  lr.manual_seed(cfg.seed + 1)
  noise_table, time_table = lr.randn(rows, chunk, width), lr.rand(rows) * 0.9 + 0.05
  lr.manual_seed(cfg.seed)
else
  error("policy must be mlp, smolvla, pi05 or groot, got " .. tostring(cfg.policy))
end
-- Frozen parameters (SmolVLA's vision tower and VLM) as built: they must come out unchanged.
local frozen = {}
for name, p in pairs(policy:named_parameters()) do
  if not p.requires_grad then frozen[name] = p:detach():clone() end
end
local opt = lr.optim.adamw(policy, { lr = 3e-3, weight_decay = 1e-2 })
local sched = lr.optim.scheduler(opt, { type = "cosine_with_warmup", warmup_steps = 3, total_steps = cfg.steps })
acc:prepare(policy, opt)
-- GR00T's dropouts (0.2 in every DiT and vl_self_attention block) draw per rank: eval mode keeps a
-- step a function of the batch and the noise / time tables, whatever the rank count.
if cfg.policy == "groot" then policy:eval() end
local loader = acc:loader(ds, { batch_size = cfg.batch_size, seed = cfg.seed, num_workers = 1,
                                drop_n_last_frames = noise_table and policy:config().chunk_size - 1 or 0 })
local ckpt = lr.checkpoint(cfg.output_dir, { policy = policy, optimizer = opt, scheduler = sched, acc = acc,
                                             loader = loader, resume = cfg.resume, keep_last = cfg.keep_last,
                                             async = cfg.save_async })
if ckpt:resume() > 0 then
  print("resumed from step " .. ckpt:resume_step())
  -- The checkpoint's processors replace the policy's; their task table is the dataset's.
  if policy:needs_task() then policy:set_tasks(ds) end
end
assert(loader:batches_per_epoch() < cfg.steps, "the run must cross an epoch boundary")

local record = {}
local interrupted = false
for step, batch in loader:steps(ckpt:resume_step() + 1, cfg.steps) do
  local inputs = policy:preprocess(batch)
  if noise_table then
    assert(batch.action_is_pad:sum():item() == 0, "a padded action chunk (drop_n_last_frames should exclude them)")
    local rows = batch.index:cpu()
    local drawn = acc:to_device { noise = noise_table:index_select(0, rows), time = time_table:index_select(0, rows) }
    inputs.noise, inputs.time = drawn.noise, drawn.time
  end
  local loss = policy:forward(inputs)
  acc:backward(loss)
  acc:clip_grad_norm(0.5)
  record["lr/" .. step] = lr.tensor({ opt:lr() }, { dtype = "float64" })
  opt:step()
  opt:zero_grad()
  sched:step()
  -- The mean over ranks: the global batch's loss, comparable across rank counts.
  record["loss/" .. step] = lr.tensor({ acc:all_reduce(loss:item(), "mean") }, { dtype = "float64" })
  if step % cfg.save_freq == 0 or step == cfg.steps or step == cfg.stop_after or step == cfg.kill_after then
    ckpt:save(step)
  end
  if step == cfg.kill_after and acc.rank == 0 and (os.getenv("LRHOST_RESTART_COUNT") or "0") == "0" then
    local ffi = require "ffi"
    ffi.cdef "int getpid(void); int kill(int pid, int sig);"
    ffi.C.kill(ffi.C.getpid(), 9)
  end
  if step == cfg.stop_after and ckpt:resume_step() == 0 then
    interrupted = true
    break
  end
end

ckpt:wait()  -- the last asynchronous save is complete before the run ends
-- state_dict() gathers FSDP shards, so every rank calls it.
local state = (not interrupted and cfg.result ~= "") and policy:state_dict() or nil
if state and acc.rank == 0 then
  for name, p in pairs(state) do record["param/" .. name] = p:detach():cpu() end
  for name, initial in pairs(frozen) do
    local final = record["param/" .. name]
    assert(final, "frozen parameter " .. name .. " is missing from the state dict")
    assert(final:equal(initial:cpu()), "frozen parameter " .. name .. " changed during training")
    record["frozen/" .. name] = initial:cpu()
  end
  lr.save_safetensors(cfg.result, record)
  print("wrote " .. cfg.result)
end
acc:wait_for_everyone()
