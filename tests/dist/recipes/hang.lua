-- Rank 0 ignores SIGTERM and spins forever (a rank stuck in a loop); rank 1 fails after a second.
-- The launcher must escalate to SIGKILL after its grace period.
local sys = require "dist_sys"
if sys.rank() == 0 then
  sys.ignore_sigterm()
  local spins = 0
  while true do spins = spins + 1 end
end
sys.sleep(1)
error("rank 1 gives up while rank 0 hangs")
