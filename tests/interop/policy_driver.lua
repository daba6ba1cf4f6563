-- lrhost's side of the policy interop tests (ACT, Diffusion); policy_oracle.py is LeRobot's side.
--
--   lrhost tests/interop/policy_driver.lua mode=make kind=act|diffusion|diffusion_ddim dir=OUT work=DIR
--     Builds a small policy (the same configs as policy_oracle.py's SMALL_CONFIGS) from a synthetic
--     dataset written to work/ (two 64x64 PNG cameras, so the processors carry real dataset stats),
--     takes `train_steps` AdamW steps on it so that no weight keeps its constant initial value
--     (LayerNorm/BatchNorm weights, BatchNorm running stats), and writes OUT with save_pretrained.
--   lrhost tests/interop/policy_driver.lua mode=run dir=DIR inputs=IN.safetensors out=OUT.safetensors
--       [seed=1234] [resave=DIR2]
--     Loads DIR with lr.policy.load (strict), optionally re-saves it to DIR2 right away (for
--     policy_oracle.py compare-dirs), and runs the protocol of policy_oracle.py on the raw batch in
--     IN: norm.<key>, chunk, action_1/2 (eval), loss, part.<name>, grad.<param>, sd.<key> (train).
local lr = require "lrhost"

local cfg = lr.config {
  mode = "",
  kind = "",
  dir = "",
  work = "",
  inputs = "",
  out = "",
  resave = "",
  seed = 1234,
  train_steps = 2,
}

-- Mirrors policy_oracle.py SMALL_CONFIGS (tiny transformer / U-Net; every other field default).
local SMALL = {
  act = { type = "act", chunk_size = 10, n_action_steps = 4, dim_model = 32, n_heads = 4, dim_feedforward = 64,
          n_encoder_layers = 2, n_decoder_layers = 1, n_vae_encoder_layers = 2, latent_dim = 8, dropout = 0.0,
          kl_weight = 10.0 },
  diffusion = { type = "diffusion", n_obs_steps = 2, horizon = 16, n_action_steps = 8, drop_n_last_frames = 7,
                down_dims = { 32, 64 }, kernel_size = 3, n_groups = 4, diffusion_step_embed_dim = 16,
                spatial_softmax_num_keypoints = 8, use_group_norm = false, use_separate_rgb_encoder_per_camera = true,
                num_inference_steps = 10 },
  diffusion_ddim = { type = "diffusion", n_obs_steps = 2, horizon = 16, n_action_steps = 8, drop_n_last_frames = 7,
                     down_dims = { 32, 64 }, kernel_size = 3, n_groups = 4, diffusion_step_embed_dim = 16,
                     spatial_softmax_num_keypoints = 8, use_group_norm = true,
                     use_separate_rgb_encoder_per_camera = false, noise_scheduler_type = "DDIM",
                     num_inference_steps = 5, prediction_type = "sample" },
}

local function make()
  local policy_cfg = SMALL[cfg.kind] or error("kind must be act, diffusion or diffusion_ddim, got '" .. cfg.kind .. "'")
  assert(cfg.dir ~= "" and cfg.work ~= "", "dir= and work= are required")
  local root = cfg.work .. "/synth"
  lr.dataset.synth { out = root, episodes = 3, images = true, wrist = true, image_size = 64, max_length = 30,
                     seed = 5 }
  local plain = lr.dataset.lerobot { root = root }
  lr.manual_seed(cfg.seed)
  local policy = lr.policy.new(policy_cfg, plain)
  local ds = lr.dataset.lerobot { root = root, delta_timestamps = policy:delta_timestamps(plain:meta().fps) }
  local loader = ds:loader { batch_size = 4, shuffle = true, seed = cfg.seed, num_workers = 1 }
  local opt = lr.optim.adamw(policy:parameters(), { lr = 1e-2, weight_decay = 0 })
  policy:train()
  for _ = 1, cfg.train_steps do
    local loss = policy:forward(policy:preprocess(loader:next()))
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
  policy:save_pretrained(cfg.dir)
  print(string.format("made %s in %s: %d parameters, %d AdamW steps", cfg.kind, cfg.dir, policy:num_parameters(),
                      cfg.train_steps))
end

local function starts(s, prefix) return s:sub(1, #prefix) == prefix end

local function run()
  assert(cfg.dir ~= "" and cfg.inputs ~= "" and cfg.out ~= "", "dir=, inputs= and out= are required")
  local policy = lr.policy.load(cfg.dir, { strict = true })
  if cfg.resave ~= "" then policy:save_pretrained(cfg.resave) end
  local inputs = lr.load_safetensors(cfg.inputs)
  local raw, raw1 = {}, {}
  for k, v in pairs(inputs) do
    if starts(k, "batch.") then raw[k:sub(7)] = v elseif starts(k, "obs1.") then raw1[k:sub(6)] = v end
  end
  local out = {}
  local norm = policy:preprocess(raw)
  local obs, obs1 = {}, {}
  for k, v in pairs(norm) do
    if k ~= "action_is_pad" then out["norm." .. k] = v end
    if starts(k, "observation.") then obs[k] = v end
  end
  for k, v in pairs(policy:preprocess(raw1)) do
    if starts(k, "observation.") then obs1[k] = v end
  end

  policy:eval()
  lr.no_grad(function()
    policy:reset()
    lr.manual_seed(cfg.seed)
    out.chunk = policy:predict_action_chunk(obs)
    policy:reset()
    lr.manual_seed(cfg.seed)
    out.action_1 = policy:postprocess(policy:select_action(obs1))
    out.action_2 = policy:postprocess(policy:select_action(obs1))
  end)

  policy:train()
  lr.manual_seed(cfg.seed)
  local loss, parts = policy:forward(norm)
  loss:backward()
  out.loss = loss:detach()
  for k, v in pairs(parts) do out["part." .. k] = v:detach() end
  for name, p in pairs(policy:named_parameters()) do
    if p.grad then out["grad." .. name] = p.grad end
  end
  for k, v in pairs(policy:state_dict()) do out["sd." .. k] = v:detach() end
  for k, v in pairs(out) do out[k] = v:contiguous() end
  lr.save_safetensors(cfg.out, out, { producer = "lrhost", seed = tostring(cfg.seed) })
  local n = 0
  for _ in pairs(out) do n = n + 1 end
  print(string.format("lrhost %s: loaded %s strictly, wrote %d tensors to %s (loss %.6f)", policy:type_name(),
                      cfg.dir, n, cfg.out, out.loss:item()))
end

if cfg.mode == "make" then make()
elseif cfg.mode == "run" then run()
else error("mode must be make or run, got '" .. cfg.mode .. "'") end
