-- Datasets from Lua: the built-in dataset written by lr.dataset.synth, items and windows, the
-- loader's batches, normalization, and the errors a recipe author meets (bad arguments, bad keys,
-- a corrupt video surfacing through the loader as a Lua error, not a hang).
local lr = require "lrhost"
local t = require "testlib"

local root = os.tmpname()
os.remove(root)
t.eq(lr.dataset.synth { out = root, episodes = 3, max_length = 12, seed = 4 } > 0, true, "synth wrote frames")

local ds = lr.dataset.lerobot { root = root, delta_timestamps = { action = { -0.1, 0, 0.1 } } }
local meta = ds:meta()
t.eq(meta.fps, 10, "fps")
t.eq(meta.total_episodes, 3, "episodes")
t.eq(meta.camera_keys[1], "observation.images.top", "camera")
t.eq(#ds, meta.total_frames, "#ds")

-- First frame of episode 0: the window's first position is padding (clamped to frame 0).
local item = ds:get(0)
t.eq(item["observation.images.top"].shape, { 3, 64, 64 }, "camera shape")
t.eq(item["observation.images.top"].dtype, "uint8", "camera dtype")
t.eq(item.action.shape, { 3, 2 }, "action window")
t.eq(item.action_is_pad:tolist(), { true, false, false }, "padding at the episode start")
t.truthy(item.action:select(0, 0):equal(item.action:select(0, 1)), "padded position repeats the edge frame")
t.eq(item.index:item(), 0, "index")
t.truthy(ds:task(item.task_index:item()):match("push the blue block"), "task string")

-- Loader: batches of the requested size, cameras as float in [0, 1], resumable state.
local loader = ds:loader { batch_size = 4, num_workers = 2, seed = 1 }
local batch = loader:next()
t.eq(batch["observation.images.top"].shape, { 4, 3, 64, 64 }, "batch camera shape")
t.eq(batch["observation.images.top"].dtype, "float32", "cameras become float")
t.truthy(batch["observation.images.top"]:max():item() <= 1.0, "cameras in [0, 1]")
t.eq(loader:state().start_index, 4, "state after one batch")
t.eq(loader:state().batch_size, 4, "state records the batch size")

-- Normalization: MEAN_STD of the action with the dataset's stats, and back.
local norm = ds:normalizer { ACTION = "MEAN_STD", STATE = "MIN_MAX" }
local normalized = norm:normalize(batch)
local stats = ds:stats().action
local expected = (batch.action - stats.mean:to("float32")) / (stats.std:to("float32") + 1e-8)
t.truthy(normalized.action:allclose(expected, 1e-5, 1e-6), "MEAN_STD matches (x - mean) / (std + eps)")
t.truthy(norm:unnormalize("action", normalized.action):allclose(batch.action, 1e-4, 1e-6), "unnormalize inverts")
t.raises(function() ds:normalizer { ACTION = "ZSCORE" } end, "unknown normalization mode 'ZSCORE'")
-- Options are read from the table the recipe gave (a reader once kept a reference to a temporary
-- copy, and every option came out as an unknown key '').
local plain = ds:normalizer({ ACTION = "MEAN_STD" }, { use_imagenet_stats = false })
t.truthy(plain:normalize(batch).action:allclose(expected, 1e-5, 1e-6), "options table accepted")
t.raises(function() ds:normalizer({ ACTION = "MEAN_STD" }, { use_imagenet = false }) end, "use_imagenet")

-- Argument and configuration errors name what is wrong.
t.raises(function() lr.dataset.lerobot {} end, "'root' is required")
t.raises(function() lr.dataset.lerobot { root = root .. "/missing" } end, "does not exist")
t.raises(function() lr.dataset.lerobot { root = root, delta_timestamps = { action = { 0.05 } } } end,
         "not multiples of 1/10")
t.raises(function() lr.dataset.lerobot { root = root, delta_timestamps = { acton = { 0 } } } end, "no feature 'acton'")
t.raises(function() lr.dataset.lerobot { root = root, episodes = { 7 } } end, "episode 7 is out of range")
t.raises(function() lr.dataset.lerobot { root = root, rot = 1 } end, "rot")
t.raises(function() ds:get(#ds) end, "outside 0..")
t.raises(function() ds:loader { batch_size = 0 } end, "batch_size")
t.raises(function() ds:loader { batch_size = 2, nm_workers = 2 } end, "nm_workers")

-- A corrupt video reaches the recipe as a Lua error from the loader.
local video = root .. "/videos/observation.images.top/chunk-000/file-000.mp4"
local f = assert(io.open(video, "r+b"))
f:write(string.rep("\0", 4096))
f:close()
local broken = lr.dataset.lerobot { root = root }
local broken_loader = broken:loader { batch_size = 2, num_workers = 2 }
t.raises(function() broken_loader:next() end, "data loader")
broken_loader:release()
t.done()
