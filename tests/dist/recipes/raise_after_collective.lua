-- Rank $LRHOST_TEST_FAIL_RANK raises right after a barrier while every other rank enters an
-- all-reduce, which then fails with a consequence ("Connection closed by peer") at about the same
-- time: the launcher must still name the raising rank as the root cause (root_cause.sh).
local lr = require "lrhost"
local acc = lr.accelerator {}
local fail_rank = tonumber(os.getenv("LRHOST_TEST_FAIL_RANK") or "1")
acc:wait_for_everyone()
if acc.rank == fail_rank then error("rank " .. fail_rank .. " failed on purpose") end
acc:all_reduce(1)
acc:wait_for_everyone()
