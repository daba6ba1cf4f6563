-- Prints, as JSON, the order in which lrhost's loader visits a dataset's frames: the `index` column
-- (global frame index) of every sample of `epochs` consecutive epochs, epoch by epoch. The interop
-- test compares each epoch with sampler_order.py (LeRobot 0.6.2's EpisodeAwareSampler algorithm).
--
--   lrhost tests/interop/sampler_order.lua root=DIR out=FILE.json seed=S batch_size=B
--          [drop_first=A drop_last=B episodes=0,2 epochs=2 start_epoch=E start_index=K]
--
-- Output: {"num_samples": N, "batch_size": B, "batches_per_epoch": M, "start_epoch": E,
--          "start_index": K, "epochs": [[index, ...], ...]} where epochs[1] begins at position K of
-- epoch E (resume) and later epochs are whole.
local lr = require "lrhost"

local cfg = lr.config {
  root = "",
  out = "",
  seed = 0,
  batch_size = 8,
  drop_first = 0,
  drop_last = 0,
  episodes = "",
  epochs = 1,
  start_epoch = 0,
  start_index = 0,
  num_workers = 1,
}
assert(cfg.root ~= "", "root=DIR is required")
assert(cfg.out ~= "", "out=FILE.json is required")

local options = { root = cfg.root, keys = { "action" } } -- only the order matters: skip cameras
if tostring(cfg.episodes) ~= "" then
  options.episodes = {}
  for word in tostring(cfg.episodes):gmatch("[^,%s]+") do options.episodes[#options.episodes + 1] = tonumber(word) end
end
local ds = lr.dataset.lerobot(options)
local loader = ds:loader {
  batch_size = cfg.batch_size,
  shuffle = true,
  seed = cfg.seed,
  num_workers = cfg.num_workers,
  drop_n_first_frames = cfg.drop_first,
  drop_n_last_frames = cfg.drop_last,
  state = { epoch = cfg.start_epoch, start_index = cfg.start_index },
}
local n = loader:num_samples()

local epochs = {}
local epoch, count = {}, cfg.start_index
while #epochs < cfg.epochs do
  local batch = loader:next()
  local index = batch.index:tolist()
  assert(#index <= cfg.batch_size, "batch larger than batch_size")
  for _, i in ipairs(index) do epoch[#epoch + 1] = i end
  count = count + #index
  if count >= n then
    -- A batch never straddles two epochs (drop_last = False: the epoch's last batch is short).
    assert(count == n, string.format("epoch overran: %d samples for %d positions", count, n))
    epochs[#epochs + 1] = epoch
    epoch, count = {}, 0
  end
end

local file = assert(io.open(cfg.out, "w"))
file:write(lr.config_json({
  num_samples = n,
  batch_size = cfg.batch_size,
  batches_per_epoch = loader:batches_per_epoch(),
  start_epoch = cfg.start_epoch,
  start_index = cfg.start_index,
  epochs = epochs,
}, -1))
file:close()
print(string.format("sampler_order out=%s num_samples=%d epochs=%d", cfg.out, n, #epochs))
