-- Minimal assertion library for Lua-level tests. A test file is a recipe: it requires this module,
-- runs checks, and ends with `t.done()`. Any failed check raises an error with the caller's
-- file:line, so lrhost exits non-zero and ctest reports the failure.
local t = { checks = 0 }

local function fail(message, level)
  error(message, (level or 2) + 1)
end

local function show(v)
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = show(x) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

-- Deep equality of numbers, strings, booleans and nested lists.
local function equal(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not equal(a[i], b[i]) then return false end
  end
  return true
end

function t.eq(actual, expected, what)
  t.checks = t.checks + 1
  if not equal(actual, expected) then
    fail(string.format("%s: expected %s, got %s", what or "eq", show(expected), show(actual)))
  end
end

-- Numbers or nested lists of numbers within an absolute + relative tolerance.
local function near(a, b, tol)
  if type(a) == "table" and type(b) == "table" then
    if #a ~= #b then return false end
    for i = 1, #a do
      if not near(a[i], b[i], tol) then return false end
    end
    return true
  end
  return type(a) == "number" and type(b) == "number" and math.abs(a - b) <= tol * (1 + math.abs(b))
end

function t.near(actual, expected, tol, what)
  t.checks = t.checks + 1
  if not near(actual, expected, tol or 1e-6) then
    fail(string.format("%s: expected %s (tol %g), got %s", what or "near", show(expected), tol or 1e-6, show(actual)))
  end
end

function t.truthy(value, what)
  t.checks = t.checks + 1
  if not value then fail((what or "truthy") .. ": expected a true value, got " .. tostring(value)) end
end

-- fn must raise an error whose message contains `pattern` (plain text, not a Lua pattern).
function t.raises(fn, pattern, what)
  t.checks = t.checks + 1
  local ok, err = pcall(fn)
  if ok then fail((what or "raises") .. ": expected an error containing '" .. pattern .. "', got none") end
  if not tostring(err):find(pattern, 1, true) then
    fail(string.format("%s: expected an error containing '%s', got '%s'", what or "raises", pattern, tostring(err)))
  end
end

function t.done()
  if t.checks == 0 then error("test file ran no checks", 2) end
  print(string.format("%d checks passed", t.checks))
end

return t
