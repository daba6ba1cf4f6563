-- A small recipe used by the CLI tests: a config with nested tables, and a native call that fails
-- when bad_call=true is given.
local lr = require "lrhost"
local cfg = lr.config {
  steps = 100,
  bad_call = false,
  name = "demo",
  optimizer = { lr = 1e-3, weight_decay = 0 },
  policy = { hidden_dims = { 8, 8 } },
}
if cfg.bad_call then
  lr.zeros("two", 3)
end
print(string.format("steps=%d lr=%g name=%s", cfg.steps, cfg.optimizer.lr, cfg.name))
