-- lrhost's side of the SmolVLA interop tests; smolvla_oracle.py is LeRobot 0.6.1's side.
--
--   lrhost tests/interop/smolvla_driver.lua mode=make vlm=VLM_DIR dir=OUT work=DIR
--     Builds the small SmolVLA of smolvla_oracle.py (same config) on the VLM folder VLM_DIR from a
--     synthetic dataset written to work/ (two cameras, so the processors carry real stats and the
--     task table), takes `train_steps` AdamW steps so the trained weights move off their init, and
--     writes OUT with save_pretrained.
--   lrhost tests/interop/smolvla_driver.lua mode=run dir=DIR inputs=IN.safetensors tasks=IN.tasks.json
--       out=OUT.safetensors [resave=DIR2]
--     The protocol of vla_protocol.lua (shared with pi_driver.lua): loads DIR strictly (lr.policy.load),
--     optionally re-saves it to DIR2, preprocesses the raw batch (batch.<key>) with the task strings, and
--     writes: norm.observation.state, norm.action, tokens, token_mask; train mode: loss (forward with the
--     given noise and time), grad.<param> of every parameter with a gradient; eval mode: chunk (sample
--     with the given noise), chunk_unnorm.
--   lrhost tests/interop/smolvla_driver.lua mode=keys vlm=VLM_DIR out=OUT.json
--     The state dict table of a SmolVLA built on VLM_DIR (full size in the test): [[key, shape, dtype]]
--     in order, the trainable parameter names and the parameter counts.
local lr = require "lrhost"

local cfg = lr.config {
  mode = "",
  vlm = "",
  dir = "",
  work = "",
  inputs = "",
  tasks = "",
  out = "",
  resave = "",
  seed = 1234,
  train_steps = 2,
}

-- Mirrors smolvla_oracle.py's small policy (every other field default).
local function small_config(vlm)
  return { type = "smolvla", vlm_model_name = vlm, load_vlm_weights = false, pad_language_to = "max_length",
           tokenizer_max_length = 16, chunk_size = 10, n_action_steps = 10, resize_imgs_with_padding = { 64, 64 } }
end

local function make()
  assert(cfg.vlm ~= "" and cfg.dir ~= "" and cfg.work ~= "", "vlm=, dir= and work= are required")
  local root = cfg.work .. "/synth"
  lr.dataset.synth { out = root, episodes = 3, images = true, wrist = true, image_size = 64, max_length = 30,
                     seed = 5 }
  local plain = lr.dataset.lerobot { root = root }
  lr.manual_seed(cfg.seed)
  local policy = lr.policy.new(small_config(cfg.vlm), plain)
  local ds = lr.dataset.lerobot { root = root, delta_timestamps = policy:delta_timestamps(plain:meta().fps) }
  local loader = ds:loader { batch_size = 4, shuffle = true, seed = cfg.seed, num_workers = 1 }
  local opt = lr.optim.adamw(policy:param_groups(), { lr = 1e-2, weight_decay = 0 })
  policy:train()
  for _ = 1, cfg.train_steps do
    local loss = policy:forward(policy:preprocess(loader:next()))
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
  policy:save_pretrained(cfg.dir)
  print(string.format("made smolvla in %s: %d parameters, %d AdamW steps", cfg.dir, policy:num_parameters(),
                      cfg.train_steps))
end

local function run()
  local out = require("vla_protocol").run(cfg)
  print(string.format("lrhost smolvla: loaded %s strictly, loss %.7f, wrote %s", cfg.dir, out.loss:item(), cfg.out))
end

local function keys()
  assert(cfg.vlm ~= "" and cfg.out ~= "", "vlm= and out= are required")
  -- smolvla_base's three cameras (no key depends on them), as smolvla_oracle.py keys.
  local inputs = { ["observation.state"] = { 6 } }
  for i = 1, 3 do inputs["observation.images.camera" .. i] = { 3, 256, 256 } end
  local policy = lr.policy.new({ type = "smolvla", vlm_model_name = cfg.vlm, load_vlm_weights = false,
                                 pad_language_to = "max_length" }, { inputs = inputs, outputs = { action = { 6 } } })
  local state_dict, parameters, trainable = {}, {}, {}
  local counts = { tensors = 0, parameters = 0, trainable = 0 }
  for _, row in ipairs(policy:weight_table()) do
    state_dict[#state_dict + 1] = { row.name, row.shape, row.dtype }
    counts.tensors = counts.tensors + 1
    if row.parameter then
      parameters[#parameters + 1] = { row.name, row.shape, row.dtype }
      counts.parameters = counts.parameters + row.numel
      if row.trainable then
        trainable[#trainable + 1] = row.name
        counts.trainable = counts.trainable + row.numel
      end
    end
  end
  lr.write_json(cfg.out, { state_dict = state_dict, parameters = parameters, trainable = trainable, counts = counts })
  print(string.format("lrhost smolvla keys: %d tensors, %d parameters, %d trainable", counts.tensors,
                      counts.parameters, counts.trainable))
end

if cfg.mode == "make" then make()
elseif cfg.mode == "run" then run()
elseif cfg.mode == "keys" then keys()
else error("mode must be make, run or keys, got '" .. cfg.mode .. "'") end
