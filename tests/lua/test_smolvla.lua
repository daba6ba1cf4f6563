-- SmolVLA from Lua on the tiny VLM shipped for the CPU recipe: lr.policy.new from a dataset (features,
-- stats, the task table), preprocessing that tokenizes each frame's task (from task_index, equal to
-- tokenizing the strings), a save_pretrained / lr.policy.load round trip with the same loss, the
-- vision feature cache through prepare_training / training_metrics (cache on == cache off, exactly;
-- a second opening of the folder hits every frame; refused with augmentation), and the errors a
-- recipe author meets.
local lr = require "lrhost"
local t = require "testlib"

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local vlm = here .. "/../../recipes/assets/smolvla_tiny_vlm"

local work = os.tmpname()
os.remove(work)
os.execute("mkdir -p '" .. work .. "'")
local root = work .. "/data"
lr.dataset.synth { out = root, episodes = 3, images = true, wrist = true, image_size = 32, max_length = 12, seed = 4 }
local plain = lr.dataset.lerobot { root = root }

local cfg = lr.policy.defaults("smolvla", { vlm_model_name = vlm, chunk_size = 4, n_action_steps = 2,
                                            num_vlm_layers = 4, resize_imgs_with_padding = { 64, 64 },
                                            tokenizer_max_length = 12, pad_language_to = "max_length" })
lr.manual_seed(1)
local policy = lr.policy.new(cfg, plain)
t.eq(policy:type_name(), "smolvla", "type")
local ds = lr.dataset.lerobot { root = root, delta_timestamps = policy:delta_timestamps(plain:meta().fps) }
local batch = ds:loader { batch_size = 3, shuffle = false, num_workers = 1 }:next()

-- The task of each frame, tokenized through the task table, equals tokenizing the strings.
local norm = policy:preprocess(batch)
local tokens = norm["observation.language.tokens"]
t.eq(tokens.shape, { 3, 12 }, "tokens padded to max_length")
t.eq(norm["observation.language.attention_mask"].dtype, "bool", "mask dtype")
local tasks = {}
for _, index in ipairs(batch.task_index:tolist()) do tasks[#tasks + 1] = ds:task(index) end
local direct = policy:preprocess(batch, tasks)
t.truthy(direct["observation.language.tokens"]:equal(tokens), "task table == task strings")
t.truthy((norm["observation.state"] - batch["observation.state"]):abs():max():item() > 0, "state normalized")

-- Same noise and time, same loss; the frozen VLM gets no gradient.
lr.manual_seed(5)
norm.noise = lr.randn(3, 4, 32)
norm.time = lr.tensor { 0.2, 0.5, 0.9 }
policy:train()
local loss = policy:forward(norm)
loss:backward()
local vlm_grads, expert_grads = 0, 0
for name, p in pairs(policy:named_parameters()) do
  if p.grad then
    if name:find("%.vlm%.") then vlm_grads = vlm_grads + 1 else expert_grads = expert_grads + 1 end
  end
end
t.eq(vlm_grads, 0, "no gradient reaches the frozen VLM")
t.truthy(expert_grads > 0, "the expert and heads get gradients")

-- Round trip: LeRobot's layout, the SmolVLA processor steps, the same loss after loading.
policy:save_pretrained(work .. "/pretrained")
local pre = io.open(work .. "/pretrained/policy_preprocessor.json"):read("*a")
t.truthy(pre:find('"tokenizer_processor"') and pre:find('"smolvla_new_line_processor"'), "language steps saved")
t.truthy(io.open(work .. "/pretrained/policy_preprocessor_step_5_normalizer_processor.safetensors") ~= nil,
         "normalizer state is step 5")
local loaded = lr.policy.load(work .. "/pretrained")
loaded:set_tasks(ds)
loaded:train()
local renorm = loaded:preprocess(batch)
renorm.noise, renorm.time = norm.noise, norm.time
t.eq(loaded:forward(renorm):item(), loss:item(), "same loss after save/load")

-- The vision feature cache, reached as the shared loop reaches it (policy:prepare_training,
-- policy:training_metrics): nothing without cache_vision_features; with it, exactly the same loss,
-- computed once per (camera, frame).
local cache_dir = work .. "/cache"
policy:train()
local before = policy:forward(norm):item()
policy:prepare_training { cache_dir = cache_dir, dataset = ds }
t.eq(next(policy:training_metrics()), nil, "no cache without cache_vision_features: no metrics")
local function with_cache()
  local p = lr.policy.load(work .. "/pretrained", { config = { cache_vision_features = true } })
  p:set_tasks(ds)
  p:train()
  return p
end
local cached = with_cache()
t.eq(next(cached:training_metrics()), nil, "no metrics before prepare_training")
cached:prepare_training { cache_dir = cache_dir, dataset = ds }
local first = cached:forward(renorm):item()
local second = cached:forward(renorm):item()
t.eq(first, before, "cache on (filling) == cache off")
t.eq(second, before, "cache on (reading) == cache off")
local stats = cached:training_metrics()
t.eq({ stats.vision_cache_miss_count, stats.vision_cache_hit_count }, { 6, 6 },
     "2 cameras x 3 frames computed once, then read")
local reopened = with_cache()  -- another rank / a resumed run: everything is there
reopened:prepare_training { cache_dir = cache_dir, dataset = ds }
t.eq(reopened:forward(renorm):item(), before, "a second opening reads the same features")
t.eq(reopened:training_metrics().vision_cache_miss_count, 0, "nothing recomputed")
-- Without a Dataset, the frame count and an id (benchmarks); unknown options are errors.
with_cache():prepare_training { cache_dir = cache_dir, num_frames = #ds, dataset_id = root }
t.raises(function() with_cache():prepare_training { cache_dir = cache_dir } end, "frame count",
         "the cache needs the dataset")
t.raises(function() cached:prepare_training { cache_dir = cache_dir, dataset = ds, agumentation = true } end,
         "agumentation", "unknown option")
t.raises(function() cached:prepare_training { dataset = "data" } end, "dataset must be a Dataset", "dataset type")
-- Inference never uses the cache (no frame index in observations).
policy:eval()
local obs = { noise = lr.randn(3, 4, 32) }
for k, v in pairs(norm) do
  if k:find("^observation%.") then obs[k] = v end
end
t.eq(policy:predict_action_chunk(obs).shape, { 3, 4, 2 }, "chunk shape")

t.raises(function() with_cache():prepare_training { cache_dir = cache_dir, dataset = ds, augmentation = true } end,
         "augmented frames differ every epoch", "cache refused with augmentation")
local trainable_vision = lr.policy.defaults("smolvla", { vlm_model_name = vlm, num_vlm_layers = 4,
                                                         freeze_vision_encoder = false, train_expert_only = false,
                                                         cache_vision_features = true })
t.raises(function() lr.policy.new(trainable_vision, plain) end, "needs a frozen vision tower",
         "cache refused with a trainable tower")
t.raises(function() lr.policy.new(lr.policy.defaults("smolvla", { vlm_model_name = work .. "/nothing" }), plain) end,
         "policy.vlm_model_name", "a missing VLM folder names the field")
t.raises(function() lr.policy.load(work .. "/pretrained"):preprocess(batch) end, "no task table",
         "task_index without a task table")
local unknown = {}
for k, v in pairs(norm) do unknown[k] = v end
unknown["observation.images.side"] = unknown["observation.images.top"]
t.raises(function() policy:forward(unknown) end, "rename_map", "an unknown camera suggests rename_map")

-- policy.gradient_checkpointing (lrhost's own option): everything trainable (SigLIP's layers are
-- checkpointed too), three training steps through the accelerator. In fp32: the same losses and
-- weights, bit for bit, as without it. Under bf16 autocast it trains too; the forward (first loss) is
-- the same, but the two cameras read the SigLIP weights through one cached bf16 cast without
-- checkpointing and through fresh casts with it, so gradients differ in the last bits
-- (nn/activation_checkpoint.hpp).
local function train_steps(checkpointing, mixed_precision)
  local c = lr.policy.defaults("smolvla", { vlm_model_name = vlm, chunk_size = 4, n_action_steps = 2,
                                            num_vlm_layers = 4, resize_imgs_with_padding = { 64, 64 },
                                            tokenizer_max_length = 12, pad_language_to = "max_length",
                                            freeze_vision_encoder = false, train_expert_only = false,
                                            gradient_checkpointing = checkpointing })
  lr.manual_seed(1)
  local p = lr.policy.new(c, plain)
  local acc = lr.accelerator { accelerator = { mixed_precision = mixed_precision } }
  local opt = lr.optim.adamw(p, { lr = 1e-3 })
  acc:prepare(p, opt)
  p:train()
  local losses = {}
  for step = 1, 3 do
    lr.manual_seed(10 + step)  -- noise and time
    local step_loss = p:forward(p:preprocess(batch))
    acc:backward(step_loss)
    opt:step()
    opt:zero_grad()
    losses[step] = step_loss:item()
  end
  return losses, p
end
local losses_off, policy_off = train_steps(false, "no")
local losses_on, policy_on = train_steps(true, "no")
t.eq(policy_on:config().gradient_checkpointing, nil, "not written to config.json")
for step = 1, 3 do t.eq(losses_on[step], losses_off[step], "checkpointed loss, step " .. step) end
t.truthy(losses_on[3] < losses_on[1], "the steps train")
local weights_off = policy_off:named_parameters()
for name, w in pairs(policy_on:named_parameters()) do
  t.truthy(w:equal(weights_off[name]), "same weights after checkpointed steps: " .. name)
end
local bf16_off = train_steps(false, "bf16")
local bf16_on = train_steps(true, "bf16")
t.eq(bf16_on[1], bf16_off[1], "bf16: the same forward")
t.truthy(bf16_on[3] < bf16_on[1], "bf16: the checkpointed steps train")

os.execute("rm -rf '" .. work .. "'")
t.done()
