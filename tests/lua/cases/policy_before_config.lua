-- Builds a policy before lr.config: `lrhost show` must refuse instead of doing real work.
local lr = require "lrhost"
local policy = lr.policy.new { type = "mlp", input_dim = 2, output_dim = 1 }
local cfg = lr.config { steps = 1 }
