-- A recipe with a syntax error on line 4.
local lr = require "lrhost"
local x = 1
local y = = 2
