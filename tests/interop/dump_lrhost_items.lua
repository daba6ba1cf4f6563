-- Dumps items of a LeRobot v3.0 dataset as lrhost's reader returns them, as JSON: the lrhost half of
-- the interop comparison (compare_items.py puts it next to dump_lerobot_items.py's safetensors).
--
--   lrhost tests/interop/dump_lrhost_items.lua root=DIR out=FILE.json [indices=0,5,9]
--          [deltas='{"action":[0,0.1]}'] [episodes=0,2] [tolerance_s=1e-4] [stats=true]
--
-- indices are ds:get() positions (relative to the selected episodes, like LeRobotDataset.__getitem__);
-- empty = the same boundary set as dump_lerobot_items.py (0, 1, n-1, n/2, first and last frame of
-- every selected episode). Output:
--   {"num_frames": n, "episodes": [...], "indices": [...], "tasks": {"<task_index>": "text"},
--    "items": {"<i>": {"<key>": {"dtype": "uint8", "shape": [3,64,96], "values": [flat, row-major]}}}}
-- plus, with stats=true, "stats": {"<feature>": {"<stat>": tensor as above}} from ds:stats().
-- Scalars have shape [] and one value. Floats print with 17 significant digits, so float32 values
-- survive the trip exactly.
local lr = require "lrhost"

local cfg = lr.config {
  root = "",
  out = "",
  indices = "",
  deltas = "",
  episodes = "",
  tolerance_s = 1e-4,
  stats = false,
}
assert(cfg.root ~= "", "root=DIR is required")
assert(cfg.out ~= "", "out=FILE.json is required")

-- Minimal JSON reader for the deltas override: objects, arrays, numbers, strings, true/false/null.
local function json_decode(text)
  local pos = 1
  local function skip() pos = text:find("[^%s]", pos) or #text + 1 end
  local value
  local function fail(what) error(string.format("deltas: bad JSON at %d (%s): %s", pos, what, text), 0) end
  local function str()
    local close = text:find('"', pos + 1, true) or fail("unterminated string")
    local s = text:sub(pos + 1, close - 1)
    pos = close + 1
    return s
  end
  function value()
    skip()
    local c = text:sub(pos, pos)
    if c == "{" then
      local obj = {}
      pos = pos + 1
      skip()
      if text:sub(pos, pos) == "}" then pos = pos + 1 return obj end
      while true do
        skip()
        if text:sub(pos, pos) ~= '"' then fail("expected a key") end
        local key = str()
        skip()
        if text:sub(pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        obj[key] = value()
        skip()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return obj end
        if d ~= "," then fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      local arr = {}
      pos = pos + 1
      skip()
      if text:sub(pos, pos) == "]" then pos = pos + 1 return arr end
      while true do
        arr[#arr + 1] = value()
        skip()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return arr end
        if d ~= "," then fail("expected ',' or ']'") end
      end
    elseif c == '"' then
      return str()
    else
      local word = text:match("^[%w%.%+%-]+", pos) or fail("unexpected character")
      pos = pos + #word
      if word == "true" then return true elseif word == "false" then return false elseif word == "null" then return nil end
      return tonumber(word) or fail("bad number " .. word)
    end
  end
  local result = value()
  skip()
  if pos <= #text then fail("trailing text") end
  return result
end

local function int_list(text)
  local out = {}
  for word in tostring(text):gmatch("[^,%s%[%]]+") do out[#out + 1] = assert(tonumber(word), "not an integer: " .. word) end
  return out
end

local options = { root = cfg.root, tolerance_s = cfg.tolerance_s }
if cfg.deltas ~= "" then options.delta_timestamps = json_decode(cfg.deltas) end
if tostring(cfg.episodes) ~= "" then options.episodes = int_list(cfg.episodes) end
local ds = lr.dataset.lerobot(options)
local n = #ds

local indices = int_list(cfg.indices)
if #indices == 0 then
  -- Boundary set, as dump_lerobot_items.py: first/last frame of each selected episode, 0, 1, n/2, n-1.
  local set = { [0] = true, [1] = true, [n - 1] = true, [math.floor(n / 2)] = true }
  local episode = ds:column("episode_index"):tolist()
  for i = 1, n do
    if i == 1 or episode[i] ~= episode[i - 1] then set[i - 1] = true end
    if i == n or episode[i] ~= episode[i + 1] then set[i - 1] = true end
  end
  for i in pairs(set) do
    if i >= 0 and i < n then indices[#indices + 1] = i end
  end
  table.sort(indices)
end

local function flat(t)
  local values = t:reshape(-1):tolist()
  if type(values) ~= "table" then values = { values } end
  return { dtype = t.dtype, shape = t.shape, values = values }
end

local items, tasks = {}, {}
for _, i in ipairs(indices) do
  local item = ds:get(i)
  local out = {}
  for key, tensor in pairs(item) do out[key] = flat(tensor) end
  items[tostring(i)] = out
  if item.task_index then
    local k = item.task_index:item()
    tasks[tostring(k)] = ds:task(k)
  end
end

local stats = nil
if cfg.stats then
  stats = {}
  for key, named in pairs(ds:stats()) do
    stats[key] = {}
    for name, tensor in pairs(named) do stats[key][name] = flat(tensor) end
  end
end

local file = assert(io.open(cfg.out, "w"))
file:write(lr.config_json({ num_frames = n, episodes = ds:meta().episodes, indices = indices, tasks = tasks, items = items,
                            stats = stats }, -1))
file:close()
print(string.format("dump_lrhost_items out=%s items=%d frames=%d", cfg.out, #indices, n))
