-- Every rank announces itself, then sleeps until a signal stops it.
local sys = require "dist_sys"
print(string.format("rank %d ready pid %d", sys.rank(), sys.pid()))
io.stdout:flush()
sys.sleep_forever()
