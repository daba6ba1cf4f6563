-- Every rank prints where it sits in the job, as torchrun-compatible variables describe it.
local sys = require "dist_sys"
print(string.format("rank %s of %s (local %s of %s, node %s) master port %s device %s pid %d",
  os.getenv("RANK"), os.getenv("WORLD_SIZE"), os.getenv("LOCAL_RANK"), os.getenv("LOCAL_WORLD_SIZE"),
  os.getenv("GROUP_RANK"), os.getenv("MASTER_PORT"), os.getenv("LRHOST_DEVICE"), sys.pid()))
io.stdout:flush()
sys.sleep(tonumber(os.getenv("LRHOST_TEST_SLEEP") or "0"))
