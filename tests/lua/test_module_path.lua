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
-- A missing module names the folders lrhost searched, LRHOST_PATH among them, and how to add one.
local _, missing = pcall(require, "no.such.module")
t.raises(function() error(missing) end, "lrhost searches these folders")
t.raises(function() error(missing) end, "/lua/team  (LRHOST_PATH)")
t.raises(function() error(missing) end, "/recipes/lib  (lrhost's recipes/lib)")
t.raises(function() error(missing) end, "put no/such/module.lua in one of these folders, or add the folder holding it to LRHOST_PATH")
t.eq(lr.format_metrics { loss = 0.123456, step = 5 }, "loss=0.1235 step=5", "embedded Lua helpers loaded")
t.eq(arg[0]:match("test_module_path.lua$") ~= nil, true, "arg[0] is the recipe")
t.done()
