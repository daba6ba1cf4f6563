-- Dataset mixtures from Lua (lr.dataset.mixture) and what the VLAs do with a mixture's per-sample
-- masks: a camera one dataset lacks (`<camera>_padding_mask` false: its black frames may hold
-- anything, the loss does not move) and padded state/action dimensions (`<key>_dim_is_pad`: zero after
-- normalization and out of the loss, so their values get exactly zero gradient contribution), for
-- SmolVLA and pi05 on their tiny geometries; ACT refuses a mixture whose cameras differ (lr.policy.new,
-- use_dataset); the
-- mixture's description (shares, missing cameras) and samples_by_group of its loader.
local lr = require "lrhost"
local t = require "testlib"

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local work = os.tmpname()
os.remove(work)
os.execute("mkdir -p '" .. work .. "'")
local top_only, with_wrist = work .. "/top_only", work .. "/with_wrist"
lr.dataset.synth { out = top_only, episodes = 3, images = true, image_size = 24, max_length = 12, seed = 4 }
lr.dataset.synth { out = with_wrist, episodes = 3, images = true, wrist = true, image_size = 24, max_length = 12,
                   seed = 5 }

-- The mixture as a whole: one task table, the cameras' union, shares by frames.
local mix = lr.dataset.mixture { mixture = { { root = top_only }, { root = with_wrist, name = "wristy" } } }
local info = mix:mixture()
t.eq(info.weighting, "frames", "no weights: by frames")
t.eq(info.datasets[2].name, "wristy", "name")
t.eq(info.datasets[1].missing_cameras, { "observation.images.wrist" }, "the first lacks the wrist camera")
t.truthy(math.abs(info.datasets[1].share + info.datasets[2].share - 1) < 1e-12, "shares sum to 1")
t.eq(#mix, info.datasets[1].frames + info.datasets[2].frames, "frames")
t.eq(lr.dataset.lerobot({ root = top_only }):mixture(), nil, "a single dataset is no mixture")
local first = mix:get(0)
t.eq(first["observation.images.wrist_padding_mask"]:item(), false, "missing camera masked out")
t.eq(first["observation.images.wrist"]:sum():item(), 0, "served black")
t.eq(mix:get(#mix - 1)["observation.images.wrist_padding_mask"]:item(), true, "present camera")
local loader = mix:loader { batch_size = 4, num_workers = 1, seed = 3 }
loader:next()
loader:next()
local seen = loader:samples_by_group()
t.eq(seen[1] + seen[2], 8, "samples_by_group counts what next() returned")

-- ACT has no empty cameras: the mixture is refused, naming the dataset and the camera.
local act_cfg = lr.policy.defaults("act", { dim_model = 32, dim_feedforward = 64, n_heads = 2, n_encoder_layers = 1,
                                           n_vae_encoder_layers = 1 })
t.raises(function() lr.policy.new(act_cfg, mix) end, "dataset.mixture 'top_only' (" .. top_only
         .. ") has no camera 'observation.images.wrist', and the act policy has no empty cameras", "lr.policy.new")
local act = lr.policy.new(act_cfg, lr.dataset.lerobot { root = with_wrist })
t.raises(function() act:use_dataset(mix) end, "has no camera 'observation.images.wrist'", "use_dataset")

local function smolvla()
  return lr.policy.defaults("smolvla", { vlm_model_name = here .. "/../../recipes/assets/smolvla_tiny_vlm",
                                         chunk_size = 4, n_action_steps = 2, num_vlm_layers = 4,
                                         resize_imgs_with_padding = { 32, 32 }, tokenizer_max_length = 12 })
end
local function pi05()
  return lr.policy.defaults("pi05", { geometry = "lrhost/pi_tiny", tokenizer_name = "lrhost/pi_tiny", chunk_size = 4,
                                      n_action_steps = 2, image_resolution = { 32, 32 }, tokenizer_max_length = 48,
                                      max_state_dim = 8, max_action_dim = 8 })
end

-- Loss and gradients of one batch with fixed noise and time.
local function loss_and_grads(policy, batch, action_dim)
  local norm = policy:preprocess(batch)
  lr.manual_seed(9)
  norm.noise = lr.randn(batch.action.shape[1], 4, action_dim)
  norm.time = lr.tensor { 0.2, 0.5, 0.7, 0.9 }
  for _, p in pairs(policy:named_parameters()) do p:zero_grad() end
  local loss = policy:forward(norm)
  loss:backward()
  local grads = {}
  for name, p in pairs(policy:named_parameters()) do
    if p.grad then grads[name] = p.grad:clone() end
  end
  return loss:item(), grads, norm
end

local function same_grads(a, b)
  for name, g in pairs(a) do
    if not b[name] or not g:equal(b[name]) then return false, name end
  end
  return true
end

for _, case in ipairs { { name = "smolvla", cfg = smolvla, max_action = 32 }, { name = "pi05", cfg = pi05, max_action = 8 } } do
  lr.manual_seed(1)
  local policy = lr.policy.new(case.cfg(), mix)
  policy:train()
  local windows = lr.dataset.mixture { mixture = { { root = top_only }, { root = with_wrist } },
                                       delta_timestamps = policy:delta_timestamps(mix:meta().fps) }
  local batch = windows:loader { batch_size = 4, shuffle = false, num_workers = 1 }:next()
  t.eq(batch["observation.images.wrist_padding_mask"]:tolist(), { false, false, false, false }, case.name .. ": batch of the first dataset")

  -- A masked camera's pixels do not move the loss or any gradient.
  local loss, grads = loss_and_grads(policy, batch, case.max_action)
  local scribbled = {}
  for k, v in pairs(batch) do scribbled[k] = v end
  scribbled["observation.images.wrist"] = lr.full(batch["observation.images.wrist"].shape, 0.7)
  local loss2, grads2 = loss_and_grads(policy, scribbled, case.max_action)
  t.eq(loss2, loss, case.name .. ": a masked camera does not change the loss")
  t.truthy(same_grads(grads, grads2), case.name .. ": nor the gradients")
  -- (Unmasked, the same pixels change it: the check can fail.)
  local unmasked = {}
  for k, v in pairs(scribbled) do unmasked[k] = v end
  unmasked["observation.images.wrist_padding_mask"] = lr.tensor { true, true, true, true }
  t.truthy(loss_and_grads(policy, unmasked, case.max_action) ~= loss, case.name .. ": unmasked, the camera counts")

  -- Padded dimensions: the last of the action's 2 and the last 2 of the state's 6 marked as padding for
  -- every sample (a narrower dataset's zero padding). Their
  -- values then change nothing (zero after normalization, out of the loss).
  local padded = {}
  for k, v in pairs(batch) do padded[k] = v end
  local action_pad, state_pad = {}, {}
  for i = 1, 4 do
    action_pad[i] = { false, true }
    state_pad[i] = { false, false, false, false, true, true }
  end
  padded["action_dim_is_pad"], padded["observation.state_dim_is_pad"] = lr.tensor(action_pad), lr.tensor(state_pad)
  local ploss, pgrads, pnorm = loss_and_grads(policy, padded, case.max_action)
  t.eq(pnorm.action:select(2, 1):abs():max():item(), 0, case.name .. ": padded action dimension is 0 after normalization")
  local moved = {}
  for k, v in pairs(padded) do moved[k] = v end
  moved.action = padded.action + lr.tensor { 0, 100 }
  moved["observation.state"] = padded["observation.state"] + lr.tensor { 0, 0, 0, 0, -50, 7 }
  local mloss, mgrads = loss_and_grads(policy, moved, case.max_action)
  t.eq(mloss, ploss, case.name .. ": padded values do not change the loss")
  local ok, where = same_grads(pgrads, mgrads)
  t.truthy(ok, case.name .. ": padded values contribute exactly zero gradient (" .. tostring(where) .. ")")
  t.truthy(ploss ~= loss, case.name .. ": the padded dimension is out of the loss")
  -- Without the masks the same values change the loss: the check can fail.
  local unpadded = {}
  for k, v in pairs(moved) do unpadded[k] = v end
  unpadded["action_dim_is_pad"], unpadded["observation.state_dim_is_pad"] = nil, nil
  t.truthy(loss_and_grads(policy, unpadded, case.max_action) ~= mloss, case.name .. ": unmasked, the values count")
end
