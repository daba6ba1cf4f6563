-- Loader sharding across ranks (label dist): every rank reads one epoch of the built-in dataset
-- through acc:loader; the gathered indices must cover every frame, batch k of the epoch must be
-- rank k mod W's batch (same order as one process's sampler), every rank gets the same number of
-- full batches (even_batches), and a second loader started from a saved position continues with
-- exactly the batches the first one returned next.
local lr = require "lrhost"
local cfg = lr.config { batch_size = 7 }
local acc = lr.accelerator { batch_size = cfg.batch_size }
local W, B = acc.world_size, cfg.batch_size
local ds = lr.dataset.lerobot { root = lr.default_dataset(), keys = {}, episodes = { 0, 1, 2, 3, 4, 5 } }
local loader = acc:loader(ds, { batch_size = B, seed = 5, num_workers = 2 })
local per_rank = loader:batches_per_epoch()

local mine = {}
local saved, expected_after_save
for j = 1, per_rank do
  local batch = loader:next()
  assert(batch.index.shape[1] == B, "every batch must be full with even_batches")
  mine[j] = batch.index
  if j == 2 then saved = loader:state() end
  if j == 3 then expected_after_save = batch.index end
end
local all = acc:gather(lr.cat(mine, 0))  -- [W * per_rank * B]: rank-major

-- Reference: one process over the same sampler (world size 1).
local single = ds:loader { batch_size = B, seed = 5, num_workers = 1 }
local n = #ds
local seen = {}
for r = 0, W - 1 do
  for j = 0, per_rank - 1 do
    local got = all:narrow(0, (r * per_rank + j) * B, B)
    for _, v in ipairs(got:tolist()) do seen[v] = true end
  end
end
for j = 0, per_rank - 1 do
  for r = 0, W - 1 do
    local k = j * W + r  -- global batch index
    if (k + 1) * B <= n then
      local reference = single:next().index
      local got = all:narrow(0, (r * per_rank + j) * B, B)
      assert(got:equal(reference), string.format("global batch %d (rank %d, batch %d) differs from one process's", k, r, j))
    end
  end
end
local first = ds:column("index"):tolist()
for _, index in ipairs(first) do assert(seen[index], "frame " .. index .. " was not sampled in the epoch") end

-- Resume from the position saved after two batches: the next batch is the third one.
local resumed = acc:loader(ds, { batch_size = B, seed = 5, num_workers = 1, state = saved })
assert(resumed:next().index:equal(expected_after_save), "resumed loader does not continue where the saved one was")
lr.log.info(string.format("rank %d/%d: loader sharding ok (%d frames, %d batches per rank)", acc.rank, W, n, per_rank))
