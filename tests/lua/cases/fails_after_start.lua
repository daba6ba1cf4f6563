-- Starts a run (lr.accelerator) and then fails: its run folder must be kept, logs and all.
local lr = require "lrhost"
local cfg = lr.config { steps = 1 }
lr.accelerator(cfg)
error("failing after the run started")
