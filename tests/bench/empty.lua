-- The empty recipe: measures lrhost's start-up (process start, LibTorch load, Lua state, module).
local lr = require "lrhost"
