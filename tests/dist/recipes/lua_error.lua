-- Rank 1 raises a Lua error; rank 0 waits until the launcher stops it.
local sys = require "dist_sys"
local function fail()
  if sys.rank() == 1 then
    sys.sleep(0.5)
    error("rank 1 failed on purpose")
  end
end
fail()
sys.sleep_forever()
