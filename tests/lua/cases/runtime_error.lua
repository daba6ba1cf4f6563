-- A recipe that fails at run time inside a function (line 6), called from line 9.
local lr = require "lrhost"

local function broken(value)
  local t = nil
  return t + value
end

broken(1)
