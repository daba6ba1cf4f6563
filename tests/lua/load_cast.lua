-- Loads a pretrained folder with another policy.dtype, file-backed as the training loop does, prepares it
-- (fsdp=true: sharded over every rank, each casting only its rows) and checks that every weight equals the
-- folder's tensor cast to the loaded weight's dtype, exactly. Used by pretrained_dtype.sh.
local lr = require "lrhost"
local cfg = lr.config { dir = "", dtype = "bfloat16", fsdp = false }
local acc = lr.accelerator { parallelism = { dp_shard = cfg.fsdp and -1 or 1, dp_replicate = 1 },
                             accelerator = { fsdp = { reshard_after_forward = true } } }
local policy = lr.policy.load(cfg.dir, { config = { dtype = cfg.dtype }, file_backed = true })
local opt = lr.optim.adamw(policy, { lr = 1e-3 })
acc:prepare(policy, opt)
local file = lr.load_safetensors(cfg.dir .. "/model.safetensors")
local checked, cast = 0, 0
for name, tensor in pairs(policy:state_dict()) do
  local stored = assert(file[name], "'" .. name .. "' is not in the file")
  local dtype = tensor.dtype
  if stored.dtype ~= dtype then cast = cast + 1 end
  assert(stored:to(dtype):equal(tensor), "'" .. name .. "' is not the file's tensor cast to " .. dtype)
  checked = checked + 1
end
assert(cast > 0, "no tensor was cast: the folder is already " .. cfg.dtype)
print(string.format("load_cast ok: rank %d of %d, %d tensors equal the file's cast (%d cast)", acc.rank,
                    acc.world_size, checked, cast))
