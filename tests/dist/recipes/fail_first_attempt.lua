-- Fails on the first attempt only (rank 1), so --max-restarts brings the job through.
local sys = require "dist_sys"
local restart = os.getenv("LRHOST_RESTART_COUNT")
print(string.format("rank %d restart_count=%s", sys.rank(), restart))
io.stdout:flush()
if restart == "0" and sys.rank() == 1 then error("first attempt fails") end
