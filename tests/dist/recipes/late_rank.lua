-- The last rank sleeps far beyond --timeout before a collective the others enter: their
-- collective times out, and the error must name that rank (and only it) as the one that never
-- reached the collective. The launcher stops the sleeper.
local lr = require "lrhost"
local sys = require "dist_sys"
local acc = lr.accelerator {}
acc:wait_for_everyone()
if acc.rank == acc.world_size - 1 then sys.sleep_forever() end
acc:all_reduce(1)
