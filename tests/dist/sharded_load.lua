-- Loading a pretrained policy on N ranks without N whole copies (LeRobot #4009): a pi05 of a mid
-- geometry (sharded_load_geometry.json: most of its ~0.6 GB in Gemma layers) is saved once (mode=save),
-- then every rank loads it with lr.policy.load{file_backed = true|false} and shards it with FSDP
-- (mode=load). Each rank reports how much its peak resident memory (VmHWM) grew from just before the
-- load to after acc:prepare, and checks that its shards hold exactly the file's values: the gathered
-- state dict equals model.safetensors on every rank, tensor for tensor. With save_to=DIR it then
-- saves one checkpoint, for the host memory of a sharded save (sharded_load.sh).
local lr = require "lrhost"
local cfg = lr.config { mode = "", dir = "", geometry = "", file_backed = true, dp_shard = -1, save_to = "" }

local function vm_hwm_bytes()
  for line in io.lines("/proc/self/status") do
    local kib = line:match("^VmHWM:%s+(%d+) kB")
    if kib then return tonumber(kib) * 1024 end
  end
  error("no VmHWM in /proc/self/status")
end

if cfg.mode == "save" then
  local features = { inputs = { ["observation.state"] = { 6 }, ["observation.images.top"] = { 3, 32, 32 } },
                     outputs = { action = { 6 } } }
  lr.manual_seed(3)
  local policy = lr.policy.new(lr.policy.defaults("pi05", { geometry = cfg.geometry, image_resolution = { 32, 32 },
                                                            chunk_size = 4, n_action_steps = 4, max_state_dim = 8,
                                                            max_action_dim = 8 }), features)
  policy:save_pretrained(cfg.dir)
  local bytes = 0
  for _, p in pairs(policy:named_parameters()) do bytes = bytes + p:numel() * 4 end
  print(string.format("saved pi05 with %d parameter bytes to %s", bytes, cfg.dir))
elseif cfg.mode == "load" then
  local acc = lr.accelerator { parallelism = { dp_shard = cfg.dp_shard, dp_replicate = 1 },
                               accelerator = { fsdp = { reshard_after_forward = true } } }
  collectgarbage()
  local before = vm_hwm_bytes()
  local policy = lr.policy.load(cfg.dir, { file_backed = cfg.file_backed })
  local opt = lr.optim.adamw(policy, { lr = 1e-3 })
  acc:prepare(policy, opt)
  local growth = vm_hwm_bytes() - before
  -- The shards hold the file's values (state_dict gathers them: a collective on every rank).
  local file = lr.load_safetensors(cfg.dir .. "/model.safetensors")
  local checked = 0
  for name, tensor in pairs(policy:state_dict()) do
    assert(file[name] and file[name]:equal(tensor), "gathered '" .. name .. "' differs from the file")
    checked = checked + 1
  end
  print(string.format("sharded load ok: rank %d of %d, file_backed=%s, peak memory grew %d bytes, %d tensors equal the file",
                      acc.rank, acc.world_size, tostring(cfg.file_backed), growth, checked))
  -- save_to=DIR: one synchronous checkpoint of the sharded model; each rank logs the host bytes its
  -- part of the save allocated at its peak (save_host_peak_bytes, in <run_dir>/logs/rank<r>.log).
  if cfg.save_to ~= "" then
    -- What one gather holds at a time (fp32): the shard sent, the group's padded full tensor, and
    -- Gloo's flat copy of it (its CPU all-gather gathers into a buffer of its own, then copies out).
    local unit = 0
    for _, u in ipairs(acc:fsdp_units()) do unit = math.max(unit, u.shard_numel * (2 * acc.world_size + 1) * 4) end
    if acc.rank == 0 then print(string.format("largest gathered unit %d bytes", unit)) end
    local ckpt = lr.checkpoint(cfg.save_to, { policy = policy, optimizer = opt, acc = acc, total_steps = 1 })
    ckpt:save(1)
    print(string.format("saved the sharded checkpoint: rank %d", acc.rank))
  end
else
  error("mode must be save or load")
end
