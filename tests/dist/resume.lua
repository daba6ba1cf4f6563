-- Resume exactness: trains the mlp policy on lr.default_dataset() (episodes 0-2, both normalizer
-- steps in use, dropout drawing from the global RNG, AdamW, a warmup + cosine schedule, gradient
-- clipping, the real loader crossing epochs) for `steps` steps, saving every `save_freq` steps.
-- With stop_after = k a first run stops after saving step k (as if killed); `lrhost resume` then
-- continues it from the checkpoint. With kill_after = k, rank 0 of the first attempt kills itself
-- after saving step k, and the launcher's --max-restarts resumes the group (restart_resume.sh).
-- The default batch of 14 leaves a short last batch in every
-- epoch (240 frames). Rank 0 writes the final parameters and the per-step losses and
-- learning rates to `result`; compare = "a,b" checks two results against each other (tolerance 0:
-- bit for bit). Driven by resume.sh, and by fsdp_resume.sh for FSDP runs resumed at another rank count.
local lr = require "lrhost"
local cfg = lr.config {
  steps = 30, batch_size = 14, seed = 1000, resume = false, output_dir = "outputs/resume_test",
  save_freq = 10, keep_last = 0, stop_after = 0, result = "", compare = "", tolerance = 0.0, dropout = 0.1,
  kill_after = 0,  -- > 0: rank 0 of the first attempt dies by SIGKILL right after saving this step
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
      worst = math.max(worst, diff)
      if diff > cfg.tolerance then
        error(string.format("%s differs: relative max diff %.3g > tolerance %.3g", name, diff, cfg.tolerance))
      end
    end
  end
  for name in pairs(b) do assert(a[name], name .. " is missing from " .. a_file) end
  assert(params > 0 and steps > 0, "nothing to compare")
  print(string.format("resume matches: %d parameters, %d resumed steps (loss and lr), worst relative diff %.3g",
                      params, steps, worst))
  return
end

local acc = lr.accelerator(cfg)
lr.manual_seed(cfg.seed)
local ds = lr.dataset.lerobot { root = lr.default_dataset(), keys = { "observation.state", "action" },
                                episodes = { 0, 1, 2 } }
local policy = lr.policy.new({ type = "mlp", hidden_dims = { 32, 32 }, dropout = cfg.dropout }, ds,
                             { normalization_mapping = { STATE = "MEAN_STD", ACTION = "MIN_MAX" } })
local opt = lr.optim.adamw(policy, { lr = 3e-3, weight_decay = 1e-2 })
local sched = lr.optim.scheduler(opt, { type = "cosine_with_warmup", warmup_steps = 3, total_steps = cfg.steps })
acc:prepare(policy, opt)
local loader = acc:loader(ds, { batch_size = cfg.batch_size, seed = cfg.seed, num_workers = 1 })
local ckpt = lr.checkpoint(cfg.output_dir, { policy = policy, optimizer = opt, scheduler = sched, acc = acc,
                                             loader = loader, resume = cfg.resume, keep_last = cfg.keep_last })
if ckpt:resume() > 0 then print("resumed from step " .. ckpt:resume_step()) end
assert(loader:batches_per_epoch() < cfg.steps, "the run must cross an epoch boundary")

local record = {}
local interrupted = false
for step, batch in loader:steps(ckpt:resume_step() + 1, cfg.steps) do
  local loss = policy:forward(policy:preprocess(batch))
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

-- state_dict() gathers FSDP shards, so every rank calls it.
local state = (not interrupted and cfg.result ~= "") and policy:state_dict() or nil
if state and acc.rank == 0 then
  for name, p in pairs(state) do record["param/" .. name] = p:detach():cpu() end
  lr.save_safetensors(cfg.result, record)
  print("wrote " .. cfg.result)
end
acc:wait_for_everyone()
