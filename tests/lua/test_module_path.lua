-- Module search path: the recipe's folder, recipes/lib, and every folder of LRHOST_PATH.
-- ctest sets LRHOST_PATH=<tests/lua/team>:<a folder that does not exist>.
local lr = require "lrhost"
local t = require "testlib"

t.eq(require("local_helper").answer, 42, "module beside the recipe")
local team = require "team.helpers"
t.eq(team.name, "team helpers", "team library through LRHOST_PATH")
t.eq(team.double(4), 8, "team library works")
local scaling = require "scaling"
t.truthy(type(scaling.linear_lr) == "function", "recipes/lib on the path")
t.raises(function() require "no.such.module" end, "module 'no.such.module' not found")
t.eq(lr.format_metrics { loss = 0.123456, step = 5 }, "loss=0.1235 step=5", "embedded Lua helpers loaded")
t.eq(arg[0]:match("test_module_path.lua$") ~= nil, true, "arg[0] is the recipe")
t.done()
