-- Prints a policy type's LeRobot defaults (lr.policy.defaults) as one JSON line on stdout, for
-- tests/lua/lerobot_train.sh to compare with what `lrhost lerobot-train` makes a shipped recipe train.
local lr = require "lrhost"
local cfg = lr.config { type = "act" }
io.write(lr.config_json(lr.policy.defaults(cfg.type), -1), "\n")
