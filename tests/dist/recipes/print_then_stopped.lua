-- Rank 0 prints a line, then waits until the launcher stops it with SIGTERM after rank 1 fails: the
-- line must be in the job's output (stdout is a pipe here), not lost in rank 0's stdio buffer when the
-- signal ends it (host/util/output_buffering.hpp).
local sys = require "dist_sys"
if sys.rank() == 0 then
  print("rank 0 printed this before it was stopped")
  sys.sleep_forever()
end
sys.sleep(1)
error("rank 1 fails after rank 0 printed")
