-- lr.config.map: a defaults table marked as a map converts to a JSON object even when empty (an
-- unmarked {} is an empty list), keeps its mark through lr.config, and refuses list entries.
local lr = require "lrhost"
local t = require "testlib"

local cfg = lr.config { rename_map = lr.config.map {}, nested = { names = lr.config.map { a = "b" } }, empty = {} }
t.eq(type(cfg.rename_map), "table", "the resolved map is a table")
t.eq(next(cfg.rename_map), nil, "and empty")
t.eq(cfg.nested.names.a, "b", "a map with entries keeps them")
local json = lr.config_json(nil, -1)
t.truthy(json:find('"rename_map":{}', 1, true), "an empty map is a JSON object: " .. json)
t.truthy(json:find('"empty":[]', 1, true), "an unmarked empty table is a list: " .. json)
-- The mark survives the trip into Lua and back (cfg passed to lr.config_json again).
t.truthy(lr.config_json(cfg, -1):find('"rename_map":{}', 1, true), "resolved maps stay maps")
t.eq(lr.config_json(lr.config.map(), -1), "{}", "lr.config.map() is an empty map")
t.eq(lr.config_json(lr.config.map(nil), -1), "{}", "and so is lr.config.map(nil)")
t.raises(function() lr.config.map { "x" } end, "a map has string keys, not list entries")
t.raises(function() lr.config.map(3) end, "bad argument #1 to 'lr.config.map'")
t.done()
