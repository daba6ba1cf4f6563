-- The loader option preprocess = policy (what the shipped training loop uses): every batch comes out
-- through the policy's preprocessor, the steps before its device step run on the host batch (cameras
-- still uint8) and the rest after the copy, and the result equals policy:preprocess on the plain
-- loader's batch key by key, bit for bit — for ACT (normalizer after the device step), SmolVLA
-- (tokenizer before it) and pi05 (normalizer, state prompt and tokenizer before it, so its tokens are
-- the ones the interop case compares with LeRobot's), and with a rename map that swaps two cameras.
-- Errors: an option that is not a Policy, a policy without processors, preprocessing such a batch again.
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

-- Two loaders over the same samples in the same order: one plain, one preprocessing.
local function same_batches(policy, what)
  local ds = lr.dataset.lerobot { root = root, delta_timestamps = policy:delta_timestamps(plain:meta().fps) }
  local raw = ds:loader { batch_size = 3, seed = 7, num_workers = 1 }
  local prepared = ds:loader { batch_size = 3, seed = 7, num_workers = 1, preprocess = policy }
  for i = 1, 2 do
    local expected = policy:preprocess(raw:next())
    local got = prepared:next()
    local keys = 0
    for key, tensor in pairs(expected) do
      keys = keys + 1
      t.truthy(got[key] ~= nil, what .. ": batch " .. i .. " has " .. key)
      t.eq(got[key].dtype, tensor.dtype, what .. ": " .. key .. " dtype")
      t.truthy(got[key]:equal(tensor), what .. ": batch " .. i .. " " .. key .. " equals policy:preprocess's")
    end
    for key in pairs(got) do t.truthy(expected[key] ~= nil, what .. ": no extra key " .. key) end
    t.truthy(keys > 4, what .. ": compared " .. keys .. " keys")
  end
  return prepared
end

local act = lr.policy.new(lr.policy.defaults("act", { chunk_size = 4, n_action_steps = 1, dim_model = 32,
                                                      dim_feedforward = 64, n_heads = 2, n_encoder_layers = 1,
                                                      n_decoder_layers = 1, n_vae_encoder_layers = 1,
                                                      pretrained_backbone_weights = "" }), plain)
local batch = same_batches(act, "act"):next()
t.eq(batch["observation.images.top"].dtype, "float32", "act: cameras float after the copy")
t.truthy(batch["observation.images.top"]:min():item() < 0, "act: cameras normalized (mean/std), not only [0, 1]")

local smolvla = lr.policy.new(lr.policy.defaults("smolvla", { vlm_model_name = vlm, chunk_size = 4, n_action_steps = 2,
                                                              num_vlm_layers = 4, resize_imgs_with_padding = { 64, 64 },
                                                              tokenizer_max_length = 12,
                                                              pad_language_to = "max_length" }), plain)
batch = same_batches(smolvla, "smolvla"):next()
t.eq(batch["observation.language.tokens"].shape, { 3, 12 }, "smolvla: tokens from the task table")

local pi05 = lr.policy.new(lr.policy.defaults("pi05", { geometry = "lrhost/pi_tiny", tokenizer_name = "lrhost/pi_tiny",
                                                        chunk_size = 4, n_action_steps = 2,
                                                        image_resolution = { 32, 32 }, tokenizer_max_length = 24,
                                                        max_state_dim = 8, max_action_dim = 8, empty_cameras = 1 }),
                           plain)
batch = same_batches(pi05, "pi05"):next()
t.eq(batch["observation.language.tokens"].shape, { 3, 24 }, "pi05: state prompt tokens")
t.eq(batch["observation.images.top"].dtype, "float32", "pi05: cameras float after the copy (identity normalization)")

-- A rename map that swaps the two cameras: the renamed frames are still converted after the copy.
act:save_pretrained(work .. "/act")
local swapped = lr.policy.load(work .. "/act", { rename_map = { ["observation.images.top"] = "observation.images.wrist",
                                                                ["observation.images.wrist"] = "observation.images.top" } })
batch = same_batches(swapped, "act, cameras swapped"):next()
t.eq(batch["observation.images.wrist"].dtype, "float32", "renamed camera converted")

-- A loader-preprocessed batch is not normalized a second time (a recipe written before the option).
t.raises(function() act:preprocess(batch) end, "preprocessed already", "preprocess twice refused")
local raw = plain:loader { batch_size = 2, num_workers = 1 }
t.truthy(act:preprocess(raw:next()) ~= nil, "a plain loader's batch is preprocessed as before")
t.raises(function() plain:loader { batch_size = 2, preprocess = 5 } end,
         "loader option preprocess must be a Policy (its preprocessor runs on every batch), got number",
         "a number is not a policy")
local bare = lr.policy.new { type = "mlp", input_dim = 2, output_dim = 2 }
t.raises(function() plain:loader { batch_size = 2, preprocess = bare } end,
         "loader option preprocess: the 'mlp' policy has no processors", "a policy without processors")
t.raises(function() plain:loader { batch_size = 2, preprocess = act, bacth_size = 3 } end, "bacth_size",
         "the other options are still checked")

os.execute("rm -rf '" .. work .. "'")
t.done()
