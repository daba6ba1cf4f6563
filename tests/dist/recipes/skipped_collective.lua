-- Rank 1 skips a collective that rank 0 enters (a rank-divergent bug): rank 0 must fail with a
-- "timed out" error naming the collective after --timeout seconds instead of hanging; rank 1
-- waits in a sleep loop until the launcher stops it.
local lr = require "lrhost"
local acc = lr.accelerator {}
acc:wait_for_everyone()
if acc.rank == 0 then
  acc:all_reduce(1)
else
  os.execute("sleep 60")
end
