-- The synthetic regression task of the example recipes: inputs x ~ N(0, I), targets
-- y = sin(x A) B + noise with A ~ N(0, 1/input_dim) (so pre-activations are ~N(0, 1)) and
-- B ~ N(0, 1/16). Targets have variance ~0.43 per output, so predicting a constant gives an MSE
-- near 0.43; the noise floor is noise^2. Splits are batches as policies read them.
--   local task = require("synthetic_regression").new(lr, { input_dim = 8, output_dim = 2, noise = 0.01 })
--   local train = task:split(8192)
local M = {}

function M.new(lr, opts)
  local A = lr.randn(opts.input_dim, 16) / math.sqrt(opts.input_dim)
  local B = lr.randn(16, opts.output_dim) / 4
  local task = {}
  -- n fresh samples: { ["observation.state"] = [n, input_dim], action = [n, output_dim] }
  function task:split(n)
    local x = lr.randn(n, opts.input_dim)
    local y = x:matmul(A):sin():matmul(B) + lr.randn(n, opts.output_dim) * opts.noise
    return { ["observation.state"] = x, action = y }
  end
  return task
end

return M
