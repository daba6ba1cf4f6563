-- Pretrained folders, processors and training checkpoints from Lua: lr.policy.new with a dataset
-- builds the processors, save_pretrained / lr.policy.load round trips (weights, config, processors),
-- strict key checks, lr.save_safetensors / lr.load_safetensors, and lr.checkpoint (save, last,
-- keep_last, resume, loader position) with the errors a recipe author meets.
local lr = require "lrhost"
local t = require "testlib"

local work = os.tmpname()
os.remove(work)
os.execute("mkdir -p '" .. work .. "'")
local root = work .. "/data"
lr.dataset.synth { out = root, episodes = 3, max_length = 12, seed = 4 }
local ds = lr.dataset.lerobot { root = root, keys = { "observation.state", "action" } }
local stats = ds:stats()

local function same(a, b) return (a - b):abs():max():item() == 0 end

-- Processors from the dataset's stats: STATE mean/std, ACTION min/max.
lr.manual_seed(1)
local policy = lr.policy.new({ type = "mlp", hidden_dims = { 8 } }, ds,
                             { normalization_mapping = { STATE = "MEAN_STD", ACTION = "MIN_MAX" } })
t.truthy(policy:has_processors(), "processors built from the dataset")
local batch = ds:loader({ batch_size = 4, shuffle = false, num_workers = 1 }):next()
local n = policy:preprocess(batch)
local state_stats = stats["observation.state"]
local want_state = (batch["observation.state"] - state_stats.mean:float()) / (state_stats.std:float() + 1e-8)
t.near((n["observation.state"] - want_state):abs():max():item(), 0, 1e-6, "MEAN_STD of the state")
local a_min, a_max = stats.action.min:float(), stats.action.max:float()
local want_action = (batch.action - a_min) * 2 / (a_max - a_min) - 1
t.near((n.action - want_action):abs():max():item(), 0, 1e-6, "MIN_MAX of the action")
t.near((policy:postprocess(n.action) - batch.action):abs():max():item(), 0, 1e-6, "postprocess inverts")
t.truthy(same(n.index, batch.index), "other entries pass through")
t.eq(policy:normalization_mapping().STATE, nil, "mlp itself declares no mapping")
t.eq(lr.policy.new({ type = "mlp", hidden_dims = { 8 } }, ds):has_processors(), true, "processors without a mapping")
t.raises(function() lr.policy.new({ type = "mlp", input_dim = 2, output_dim = 2 }):preprocess(batch) end,
         "has no processors")
t.raises(function() lr.policy.new({ type = "mlp", hidden_dims = { 8 } }, ds, { use_imagenet = true }) end,
         "unknown")

-- Policy introspection.
t.eq(policy:type_name(), "mlp", "type")
t.eq(policy:optimizer_preset().type, "adamw", "optimizer preset")
t.eq(policy:scheduler_preset(), nil, "no scheduler preset")
local sd = policy:state_dict()
t.truthy(sd["layers.0.weight"] ~= nil and sd["layers.2.bias"] ~= nil, "state_dict keys")
t.eq(next(policy:delta_indices()), nil, "mlp needs only the current frame")
t.eq(next(policy:delta_timestamps(10)), nil, "no delta timestamps")
t.raises(function() policy:delta_timestamps(0) end, "fps must be > 0")

-- save_pretrained -> lr.policy.load: same weights, config, processors and predictions.
local pre = work .. "/pretrained"
policy:save_pretrained(pre)
lr.manual_seed(99)
local loaded = lr.policy.load(pre)
t.eq(loaded:is_training(), false, "loaded in eval mode")
t.eq(loaded:config().hidden_dims, { 8 }, "config")
t.eq(loaded:config().input_dim, policy:config().input_dim, "config input_dim")
for name, tensor in pairs(policy:state_dict()) do t.truthy(same(loaded:state_dict()[name], tensor), name) end
local ln = loaded:preprocess(batch)
t.truthy(same(ln["observation.state"], n["observation.state"]) and same(ln.action, n.action), "same processors")
policy:eval()
t.truthy(same(loaded:select_action(n), policy:select_action(n)), "same predictions")
local files = lr.load_safetensors(pre .. "/policy_preprocessor_step_3_normalizer_processor.safetensors")
t.truthy(files["observation.state.mean"] ~= nil and files["timestamp.mean"] ~= nil, "every stat is saved")

-- Strict key check through lr.save_safetensors / lr.load_safetensors.
local weights, metadata = lr.load_safetensors(pre .. "/model.safetensors")
t.eq(metadata.format, "pt", "model metadata")
weights["extra.weight"] = lr.zeros(2)
lr.save_safetensors(pre .. "/model.safetensors", weights, { format = "pt" })
t.raises(function() lr.policy.load(pre) end, "unexpected keys 'extra.weight'")
t.eq(lr.policy.load(pre, { strict = false }):type_name(), "mlp", "strict = false loads")
t.raises(function() lr.policy.load(pre, { strickt = false }) end, "unknown")
t.raises(function() lr.policy.load(work .. "/none") end, "no such folder")
t.raises(function() lr.save_safetensors(work .. "/x.safetensors", { a = 1 }) end, "'a' is a number, expected Tensor")
t.raises(function() lr.load_safetensors(pre .. "/config.json") end, "config.json")

-- Training checkpoints.
local out = work .. "/run"
local opt = lr.optim.adamw(policy, { lr = 1e-3 })
local sched = lr.optim.scheduler(opt, { type = "constant" })
t.raises(function() lr.checkpoint(out, { optimizer = opt }) end, "'policy' is required")
t.raises(function() lr.checkpoint(out, { policy = policy, keep = 2 }) end,
         "unknown option 'keep' (valid: policy, optimizer, scheduler, loader, acc, ema, keep_last, resume, config, "
           .. "total_steps, async, save_freq, save_checkpoint)")
t.raises(function() lr.checkpoint(out, { policy = policy, keep_last = "2" }) end, "keep_last: expected")
t.raises(function() lr.checkpoint(out, { policy = opt }) end, "policy: expected Policy, got Optimizer")
t.raises(function() lr.checkpoint(out, { policy = policy, resume = true }):resume() end, "holds no complete checkpoint")
t.raises(function() lr.checkpoint(out, { policy = policy, resume = "atuo" }) end,
         "resume = \"atuo\" is neither true, false, \"auto\" nor an existing checkpoint folder")
local fresh = lr.checkpoint(out, { policy = policy, resume = "auto" })
t.raises(function() fresh:save(1) end, "before Checkpoint:resume()")
t.eq(fresh:resume(), 0, "resume = auto without a checkpoint starts fresh")
t.raises(function() fresh:resume() end, "already called")
t.eq(fresh:last_dir(), nil, "no checkpoint yet")

policy:train()
local loader = ds:loader { batch_size = 4, num_workers = 1 }
local ckpt = lr.checkpoint(out, { policy = policy, optimizer = opt, scheduler = sched, loader = loader,
                                  keep_last = 2, total_steps = 1000000 })
for step, b in loader:steps(ckpt:resume_step() + 1, 3) do
  local loss = policy:forward(policy:preprocess(b))
  loss:backward()
  opt:step()
  opt:zero_grad()
  sched:step()
  t.eq(ckpt:save(step), out .. "/checkpoints/000000" .. step, "step folder, padded to 7 digits")
end
t.eq(ckpt:last_dir(), out .. "/checkpoints/0000003", "last complete checkpoint")
local listing = io.popen("ls '" .. out .. "/checkpoints'"):read("*a")
t.eq(listing, "0000002\n0000003\nlast\n", "keep_last = 2 and the last link")
local saved_state = loader:state()
local next_batch = loader:next()  -- what the run would have trained on at step 4

-- The run's code is frozen in every checkpoint: the recipe, the modules it required, overrides.
local last_pre = out .. "/checkpoints/0000003/pretrained_model/"
local launch = io.open(last_pre .. "train_launch.json"):read("*a")
t.truthy(launch:find('"testlib.lua"', 1, true), "train_launch.json lists the required module testlib")
t.truthy(io.open(last_pre .. "train_modules/testlib.lua") ~= nil, "testlib.lua is copied")
t.truthy(io.open(last_pre .. "train_recipe.lua"):read("*a"):find("Pretrained folders, processors", 1, true),
         "the recipe is copied")

-- A fresh run (resume = false) into a folder that holds checkpoints is refused.
t.raises(function() lr.checkpoint(out, { policy = policy }) end, "already holds checkpoints of another run")

-- Resume into fresh objects: weights, optimizer and the loader position come back.
lr.manual_seed(5)
local p2 = lr.policy.new({ type = "mlp", hidden_dims = { 8 } }, ds)
local opt2 = lr.optim.adamw(p2, { lr = 1e-3 })
local ck2 = lr.checkpoint(out, { policy = p2, optimizer = opt2, resume = true })
t.eq(ck2:resume_step(), 0, "nothing is restored before resume()")
t.eq(ck2:resume(), 3, "restored step 3: the loop continues at 4")
t.eq(ck2:resume_step(), 3, "resume_step after resume()")
t.eq(ck2:resumed_from(), out .. "/checkpoints/0000003", "resumed folder")
for name, tensor in pairs(policy:state_dict()) do t.truthy(same(p2:state_dict()[name], tensor), "resumed " .. name) end
t.eq(ck2:loader_state().start_index, saved_state.start_index, "saved loader position")
t.raises(function() ck2:track_loader(ds:loader { batch_size = 4, num_workers = 1 }) end,
         "track the loader before ckpt:resume()")
ck2:track_loader(ds:loader { batch_size = 4, num_workers = 1, state = ck2:loader_state() })

-- The loader can be built before or after the checkpoint: resume() moves it to the saved position,
-- discarding the batches it had prepared from the start.
local l3 = ds:loader { batch_size = 4, num_workers = 2 }
local p3 = lr.policy.new({ type = "mlp", hidden_dims = { 8 } }, ds)
local ck3 = lr.checkpoint(out, { policy = p3, optimizer = lr.optim.adamw(p3, { lr = 1e-3 }), loader = l3,
                                 resume = "auto" })
t.eq(ck3:resume(), 3, "resume = auto finds step 3")
t.eq(l3:state().start_index, saved_state.start_index, "the loader continues at the saved position")
t.truthy(same(l3:next().index, next_batch.index), "the first batch after resume is the one step 4 would have used")

-- A damaged newest checkpoint: resume falls back to the newest sound one and moves the damaged
-- one aside (never deletes it); `last` follows.
local model = out .. "/checkpoints/0000003/pretrained_model/model.safetensors"
local bytes = io.open(model, "rb"):read("*a")
local truncated = io.open(model, "wb")
truncated:write(bytes:sub(1, #bytes - 10))
truncated:close()
local p4 = lr.policy.new({ type = "mlp", hidden_dims = { 8 } }, ds)
local ck4 = lr.checkpoint(out, { policy = p4, resume = "auto" })
t.eq(ck4:resume(), 2, "falls back to step 2")
local moved = io.popen("ls '" .. out .. "/checkpoints'/superseded-*/"):read("*a")
t.eq(moved, "0000003\n", "the damaged step 3 is kept aside")
t.eq(io.popen("readlink '" .. out .. "/checkpoints/last'"):read("*a"), "0000002\n", "last points at step 2")
-- Resume replaced the policy's processors by the checkpoint's (mapped STATE/ACTION, as saved).
local rn = p2:preprocess(batch)
t.truthy(same(rn.action, n.action), "processors come from the checkpoint")

-- ACT and Diffusion (small configs) round trip through save_pretrained / lr.policy.load with every
-- state dict entry (buffers included) and their processors.
local full = lr.dataset.lerobot { root = root }
for _, cfg in ipairs {
  { type = "act", dim_model = 32, n_heads = 4, dim_feedforward = 32, n_encoder_layers = 1, n_decoder_layers = 1,
    chunk_size = 4, n_action_steps = 4 },
  { type = "diffusion", down_dims = { 16, 32 }, n_obs_steps = 2, horizon = 8, n_action_steps = 4,
    crop_shape = { 56, 56 } },
} do
  local p = lr.policy.new(cfg, full)
  local dir = work .. "/" .. cfg.type
  p:save_pretrained(dir)
  local q = lr.policy.load(dir)
  local count = 0
  for name, tensor in pairs(p:state_dict()) do
    count = count + 1
    t.truthy(q:state_dict()[name] ~= nil and same(q:state_dict()[name], tensor), cfg.type .. " " .. name)
  end
  t.truthy(count > 50, cfg.type .. " has its full state dict")
  local qc, keys = q:config(), 0
  for key, value in pairs(p:config()) do
    keys = keys + 1
    if type(value) ~= "table" then t.eq(qc[key], value, cfg.type .. " config." .. key) end
  end
  t.truthy(keys > 10, cfg.type .. " config fields")
  local qb, pb = q:preprocess(batch), p:preprocess(batch)
  t.truthy(same(qb.action, pb.action), cfg.type .. " processors")
end

os.execute("rm -rf '" .. work .. "'")
t.done()
