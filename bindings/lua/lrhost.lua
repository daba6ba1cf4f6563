-- Lua-side helpers of the `lrhost` module, embedded in the binary. Receives the module table
-- (native functions already in place) and adds what is simplest to write in Lua.
local lr = ...

-- "k1=v1 k2=v2" with keys sorted and numbers in compact form; tensors print their :item().
function lr.format_metrics(metrics)
  local keys = {}
  for k in pairs(metrics) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = metrics[k]
    if type(v) == "userdata" and v.item then v = v:item() end
    if type(v) == "number" then
      if v == math.floor(v) and math.abs(v) < 1e15 then v = string.format("%d", v)
      else v = string.format("%.4g", v) end
    end
    parts[#parts + 1] = k .. "=" .. tostring(v)
  end
  return table.concat(parts, " ")
end

-- lr.log_step(step, {loss = ..., lr = ...}): one log line per logging step.
function lr.log_step(step, metrics)
  lr.log.info(string.format("step %d %s", step, lr.format_metrics(metrics)))
end
