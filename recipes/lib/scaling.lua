-- Explicit learning-rate and step scaling rules for data-parallel training. lrhost never scales
-- anything silently: a recipe that wants its LR or step count to follow the effective batch size
-- calls one of these and logs what it chose.
--   local scaling = require "scaling"
--   local cfg = lr.config({...}, function(cfg, plan)   -- plan.world_size, plan.effective_batch
--     cfg.optimizer.lr = scaling.sqrt_lr(cfg.optimizer.lr, cfg.reference_batch, plan.effective_batch)
--   end)
-- Doing it inside lr.config's derive function makes `lrhost show RECIPE --gpus N` display it.
local M = {}

local function check_positive(name, value)
  if type(value) ~= "number" or value <= 0 then
    error(string.format("scaling: %s must be a positive number, got %s", name, tostring(value)), 3)
  end
end

-- Linear rule (Goyal et al.): lr grows in proportion to the batch.
function M.linear_lr(base_lr, base_batch, effective_batch)
  check_positive("base_lr", base_lr)
  check_positive("base_batch", base_batch)
  check_positive("effective_batch", effective_batch)
  return base_lr * effective_batch / base_batch
end

-- Square-root rule, common for Adam-type optimizers.
function M.sqrt_lr(base_lr, base_batch, effective_batch)
  check_positive("base_lr", base_lr)
  check_positive("base_batch", base_batch)
  check_positive("effective_batch", effective_batch)
  return base_lr * math.sqrt(effective_batch / base_batch)
end

-- The lr for a rule named in a config: "none" | "linear" | "sqrt".
function M.lr_for(rule, base_lr, base_batch, effective_batch)
  if rule == "none" then return base_lr end
  if rule == "linear" then return M.linear_lr(base_lr, base_batch, effective_batch) end
  if rule == "sqrt" then return M.sqrt_lr(base_lr, base_batch, effective_batch) end
  error(string.format("scaling: unknown lr rule '%s' (valid: 'none', 'linear', 'sqrt')", tostring(rule)), 2)
end

-- Keeps the number of samples seen constant: fewer steps with a bigger batch (rounded up).
function M.scale_steps(base_steps, base_batch, effective_batch)
  check_positive("base_steps", base_steps)
  check_positive("base_batch", base_batch)
  check_positive("effective_batch", effective_batch)
  return math.ceil(base_steps * base_batch / effective_batch)
end

return M
