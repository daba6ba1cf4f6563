-- Rank 1 dies by SIGKILL (no error file possible); rank 0 sleeps in a loop until stopped.
local sys = require "dist_sys"
if sys.rank() == 1 then
  sys.sleep(0.5)
  sys.kill_self(9)
end
sys.sleep_forever()
