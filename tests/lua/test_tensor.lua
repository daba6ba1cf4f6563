-- Lua-level tests of the Tensor API (bindings/wrap_tensor*.cpp), run through the real binary.
-- Every expected value is computed by hand (see the comments), never by the API itself.
local lr = require "lrhost"
local t = require "testlib"

local E = math.exp(1)
local TOL = 1e-5 -- float32 results of transcendental functions

-- Runs fn, which must fail; returns the error message.
local function error_of(fn)
  local ok, err = pcall(fn)
  t.truthy(not ok, "expected an error")
  return tostring(err)
end

local function sorted(list)
  local copy = {}
  for i, v in ipairs(list) do copy[i] = v end
  table.sort(copy)
  return copy
end

---------------------------------------------------------------------------------------------------
-- creation: lr.tensor
---------------------------------------------------------------------------------------------------
do
  local m = lr.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
  t.eq(m.shape, { 2, 3 }, "tensor shape")
  t.eq(m.dtype, "float32", "tensor default dtype")
  t.eq(m:tolist(), { { 1, 2, 3 }, { 4, 5, 6 } }, "tensor values")

  local b = lr.tensor({ true, false, true })
  t.eq(b.dtype, "bool", "bool table gives bool dtype")
  t.eq(b:tolist(), { true, false, true }, "bool values")
  t.eq(lr.tensor({ { true }, { false } }):tolist(), { { true }, { false } }, "nested bools")

  local i = lr.tensor({ 1, 2, 3 }, { dtype = "int64" })
  t.eq(i.dtype, "int64", "dtype option")
  t.eq(i:tolist(), { 1, 2, 3 }, "int64 values")
  t.eq(lr.tensor({ true, false }, { dtype = "float32" }):tolist(), { 1, 0 }, "bools with a numeric dtype")
  t.eq(lr.tensor({ 0, 2 }, { dtype = "bool" }):tolist(), { false, true }, "numbers with dtype bool")
  t.eq(lr.tensor({ 1.5 }, { dtype = "float64" }).dtype, "float64", "float64 option")

  local s = lr.tensor(3.5)
  t.eq(s.ndim, 0, "number gives a 0-dim tensor")
  t.eq(s:item(), 3.5, "scalar value")
  t.eq(lr.tensor(2, { dtype = "int32" }).dtype, "int32", "scalar with dtype")
  t.eq(lr.tensor(true):item(), true, "boolean scalar")
  t.eq(lr.tensor(true).dtype, "bool", "boolean scalar dtype")
  t.eq(lr.tensor({}).shape, { 0 }, "empty table")
  t.eq(lr.tensor({ { 1, 2, 3 } }).shape, { 1, 3 }, "single row")
  t.eq(lr.tensor({ { { 1 }, { 2 } }, { { 3 }, { 4 } } }).shape, { 2, 2, 1 }, "3-d nesting")
  -- nesting deeper than the 20 stack slots a C function is guaranteed
  local deep = 5
  for _ = 1, 40 do deep = { deep } end
  local d = lr.tensor(deep)
  t.eq(d.ndim, 40, "40 nesting levels")
  local back = d:tolist()
  for _ = 1, 40 do back = back[1] end
  t.eq(back, 5, "tolist of 40 levels")
end

---------------------------------------------------------------------------------------------------
-- creation: zeros / ones / full / rand / randn
---------------------------------------------------------------------------------------------------
do
  local z = lr.zeros(2, 3)
  t.eq(z.shape, { 2, 3 }, "zeros(2, 3) shape")
  t.eq(z.dtype, "float32", "zeros default dtype")
  t.eq(z:tolist(), { { 0, 0, 0 }, { 0, 0, 0 } }, "zeros values")
  local z64 = lr.zeros({ 2, 3 }, { dtype = "float64" })
  t.eq(z64.shape, { 2, 3 }, "zeros({2, 3}) shape")
  t.eq(z64.dtype, "float64", "zeros dtype option")
  t.eq(lr.zeros(4, { dtype = "int64" }).dtype, "int64", "zeros(n, opts)")
  t.eq(lr.zeros({}).ndim, 0, "zeros({}) is 0-dim")

  t.eq(lr.ones(2, 2):tolist(), { { 1, 1 }, { 1, 1 } }, "ones values")
  t.eq(lr.ones({ 3 }, { dtype = "bool" }):tolist(), { true, true, true }, "ones bool")
  t.eq(lr.ones(1, 2, 3).shape, { 1, 2, 3 }, "ones 3-d")

  t.eq(lr.full({ 2, 2 }, 7):tolist(), { { 7, 7 }, { 7, 7 } }, "full({2, 2}, 7)")
  t.eq(lr.full(2, 3, -1.5):tolist(), { { -1.5, -1.5, -1.5 }, { -1.5, -1.5, -1.5 } }, "full(2, 3, v)")
  t.eq(lr.full({ 3 }, 4, { dtype = "int64" }).dtype, "int64", "full dtype option")
  t.eq(lr.full(2, 9, { dtype = "float64" }):tolist(), { 9, 9 }, "full(n, v, opts)")

  lr.manual_seed(1)
  local r = lr.rand(3, 4)
  t.eq(r.shape, { 3, 4 }, "rand shape")
  t.eq(r.dtype, "float32", "rand dtype")
  for _, row in ipairs(r:tolist()) do
    for _, v in ipairs(row) do t.truthy(v >= 0 and v < 1, "rand in [0, 1)") end
  end
  t.eq(lr.rand({ 2 }, { dtype = "float64" }).dtype, "float64", "rand dtype option")

  local n = lr.randn(4000, { dtype = "float64" })
  t.eq(n.shape, { 4000 }, "randn shape")
  t.eq(n.dtype, "float64", "randn dtype option")
  t.near(n:mean():item(), 0, 0.1, "randn mean near 0")
  t.near(n:std():item(), 1, 0.1, "randn std near 1")
  t.eq(lr.randn({ 2, 5 }).shape, { 2, 5 }, "randn table shape")
end

---------------------------------------------------------------------------------------------------
-- creation: arange / eye / randint / randperm / manual_seed
---------------------------------------------------------------------------------------------------
do
  t.eq(lr.arange(5):tolist(), { 0, 1, 2, 3, 4 }, "arange(stop)")
  t.eq(lr.arange(2, 5):tolist(), { 2, 3, 4 }, "arange(start, stop)")
  t.eq(lr.arange(0, 1, 0.25):tolist(), { 0, 0.25, 0.5, 0.75 }, "arange(start, stop, step)")
  t.eq(lr.arange(5, 0, -2):tolist(), { 5, 3, 1 }, "arange negative step")
  t.eq(lr.arange(3, { dtype = "int64" }).dtype, "int64", "arange(stop, opts)")
  t.eq(lr.arange(1, 3, { dtype = "float64" }).dtype, "float64", "arange(start, stop, opts)")
  t.eq(lr.arange(0, 0).shape, { 0 }, "empty arange")

  t.eq(lr.eye(3):tolist(), { { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } }, "eye(3)")
  t.eq(lr.eye(2, { dtype = "int64" }).dtype, "int64", "eye dtype")
  t.eq(lr.eye(2, 3):tolist(), { { 1, 0, 0 }, { 0, 1, 0 } }, "eye(n, m)")
  t.eq(lr.eye(3, 2, { dtype = "float64" }):tolist(), { { 1, 0 }, { 0, 1 }, { 0, 0 } }, "eye(n, m, opts)")

  lr.manual_seed(7)
  local ri = lr.randint(3, 6, { 200 })
  t.eq(ri.dtype, "int64", "randint default dtype")
  t.eq(ri.shape, { 200 }, "randint shape")
  local seen = {}
  for _, v in ipairs(ri:tolist()) do
    t.truthy(v >= 3 and v <= 5 and v == math.floor(v), "randint value in [low, high)")
    seen[v] = true
  end
  t.truthy(seen[3] and seen[4] and seen[5], "randint hits every value of a small range")
  t.eq(lr.randint(5, 6, 2, 2):tolist(), { { 5, 5 }, { 5, 5 } }, "randint single value, integer shape")
  t.eq(lr.randint(0, 2, { 3 }, { device = "cpu" }).dtype, "int64", "randint options without dtype stay int64")
  t.eq(lr.randint(0, 2, { 3 }, { dtype = "float32" }).dtype, "float32", "randint dtype option")

  local p = lr.randperm(10)
  t.eq(p.dtype, "int64", "randperm dtype")
  t.eq(sorted(p:tolist()), { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 }, "randperm is a permutation")
  t.eq(lr.randperm(0).shape, { 0 }, "randperm(0)")
  t.eq(lr.randperm(3, { dtype = "int32" }).dtype, "int32", "randperm dtype option")

  lr.manual_seed(123)
  local a1, b1 = lr.rand(5):tolist(), lr.randn(3):tolist()
  lr.manual_seed(123)
  local a2, b2 = lr.rand(5):tolist(), lr.randn(3):tolist()
  t.eq(a2, a1, "manual_seed reproduces rand")
  t.eq(b2, b1, "manual_seed reproduces randn")
  lr.manual_seed(124)
  t.truthy(lr.rand(5):tolist()[1] ~= a1[1], "another seed gives other numbers")
end

---------------------------------------------------------------------------------------------------
-- properties
---------------------------------------------------------------------------------------------------
do
  local x = lr.zeros(2, 3, 4)
  t.eq(x.shape, { 2, 3, 4 }, "shape")
  t.eq(x:size(), { 2, 3, 4 }, "size()")
  t.eq(x:size(1), 3, "size(dim)")
  t.eq(x:size(-1), 4, "size(-1)")
  t.eq(x:numel(), 24, "numel")
  t.eq(x.ndim, 3, "ndim")
  t.eq(x.dtype, "float32", "dtype")
  t.eq(x.device, "cpu", "device")
  t.eq(x.requires_grad, false, "requires_grad default")
  t.eq(x.grad, nil, "grad nil")
  t.eq(x.is_leaf, true, "is_leaf")
  t.eq(x:type(), "Tensor", "type()")

  local w = lr.ones(3, { requires_grad = true })
  t.eq(w.requires_grad, true, "requires_grad option")
  t.eq(w.grad, nil, "grad nil before backward")
  t.eq(w.is_leaf, true, "created tensor is a leaf")
  local y = w * 2
  t.eq(y.requires_grad, true, "result requires grad")
  t.eq(y.is_leaf, false, "result is not a leaf")
  t.eq(lr.tensor(1).ndim, 0, "0-dim ndim")
  t.eq(lr.tensor(1).shape, {}, "0-dim shape")
end

---------------------------------------------------------------------------------------------------
-- conversions
---------------------------------------------------------------------------------------------------
do
  local x = lr.tensor({ 1.7, -1.7, 0 })
  t.eq(x:to("float64").dtype, "float64", "to(dtype string)")
  t.eq(x:to("cpu").device, "cpu", "to(device string)")
  t.eq(x:to({ dtype = "int32" }).dtype, "int32", "to{dtype=}")
  t.eq(x:to({ dtype = "int32" }):tolist(), { 1, -1, 0 }, "to int truncates toward zero")
  t.eq(x:to({ device = "cpu" }).dtype, "float32", "to{device=} keeps dtype")
  t.eq(x:double().dtype, "float64", "double()")
  t.eq(x:double():float().dtype, "float32", "float()")
  t.eq(x:long().dtype, "int64", "long() dtype")
  t.eq(x:long():tolist(), { 1, -1, 0 }, "long() values")
  t.eq(x:bool():tolist(), { true, true, false }, "bool() values")
  t.eq(lr.tensor({ true, false }):float():tolist(), { 1, 0 }, "bool to float")

  t.eq(lr.tensor({ { 42 } }):item(), 42, "item of a 1-element tensor")
  t.eq(lr.tensor(0.25, { dtype = "float64" }):item(), 0.25, "item float64")
  t.eq(lr.tensor({ false }):item(), false, "item of bool")
  t.eq(lr.tensor(-3, { dtype = "int64" }):item(), -3, "item of int64")

  t.eq(lr.tensor(5):tolist(), 5, "tolist of 0-dim is a number")
  t.eq(lr.arange(8):reshape(2, 2, 2):tolist(), { { { 0, 1 }, { 2, 3 } }, { { 4, 5 }, { 6, 7 } } }, "tolist 3-d")
  t.eq(lr.tensor({ { true, false }, { false, true } }):tolist(), { { true, false }, { false, true } }, "tolist bool")
  -- tolist of a non-contiguous view follows the logical order
  t.eq(lr.tensor({ { 1, 2 }, { 3, 4 } }):t():tolist(), { { 1, 3 }, { 2, 4 } }, "tolist of a transpose")
  t.eq(lr.tensor({ 0.5 }, { dtype = "float16" }):tolist(), { 0.5 }, "tolist of float16")
end

---------------------------------------------------------------------------------------------------
-- arithmetic metamethods and broadcasting
---------------------------------------------------------------------------------------------------
do
  local x = lr.tensor({ 1, 2, 3 })
  local y = lr.tensor({ 4, 5, 6 })
  t.eq((x + y):tolist(), { 5, 7, 9 }, "t + t")
  t.eq((x - y):tolist(), { -3, -3, -3 }, "t - t")
  t.eq((x * y):tolist(), { 4, 10, 18 }, "t * t")
  t.eq((y / x):tolist(), { 4, 2.5, 2 }, "t / t")
  t.eq((x ^ 2):tolist(), { 1, 4, 9 }, "t ^ n")
  t.eq((2 ^ x):tolist(), { 2, 4, 8 }, "n ^ t")
  t.eq((x ^ y):tolist(), { 1, 32, 729 }, "t ^ t")
  t.eq((y % x):tolist(), { 0, 1, 0 }, "t % t")
  t.eq((-x):tolist(), { -1, -2, -3 }, "unary minus")
  t.eq((x + 1):tolist(), { 2, 3, 4 }, "t + n")
  t.eq((1 + x):tolist(), { 2, 3, 4 }, "n + t")
  t.eq((x - 2):tolist(), { -1, 0, 1 }, "t - n")
  t.eq((2 - x):tolist(), { 1, 0, -1 }, "n - t")
  t.eq((x * 3):tolist(), { 3, 6, 9 }, "t * n")
  t.eq((3 * x):tolist(), { 3, 6, 9 }, "n * t")
  t.eq((x / 2):tolist(), { 0.5, 1, 1.5 }, "t / n")
  t.eq((6 / x):tolist(), { 6, 3, 2 }, "n / t")
  t.eq((7 % x):tolist(), { 0, 1, 1 }, "n % t")
  -- % follows the sign of the divisor, like Lua and Python
  t.eq((lr.tensor({ -7, 7 }) % 3):tolist(), { 2, 1 }, "t % positive")
  t.eq((lr.tensor({ -7, 7 }) % -3):tolist(), { -1, -2 }, "t % negative")

  -- named methods
  t.eq(x:add(y):tolist(), { 5, 7, 9 }, "add")
  t.eq(x:sub(1):tolist(), { 0, 1, 2 }, "sub")
  t.eq(x:mul(y):tolist(), { 4, 10, 18 }, "mul")
  t.eq(y:div(2):tolist(), { 2, 2.5, 3 }, "div")
  t.eq(x:pow(3):tolist(), { 1, 8, 27 }, "pow")
  t.eq(y:remainder(4):tolist(), { 0, 1, 2 }, "remainder")
  t.eq(x:maximum(lr.tensor({ 2, 2, 2 })):tolist(), { 2, 2, 3 }, "maximum")
  t.eq(x:minimum(2):tolist(), { 1, 2, 2 }, "minimum with a number")

  -- dtypes: a Lua number does not change the tensor's dtype ...
  t.eq((lr.tensor({ 1 }, { dtype = "float64" }) + 1).dtype, "float64", "float64 + n stays float64")
  t.eq((lr.tensor({ 1 }, { dtype = "float16" }) * 2).dtype, "float16", "float16 * n stays float16")
  local i = lr.tensor({ 1, 2, 3 }, { dtype = "int64" })
  t.eq((i * 2).dtype, "int64", "int64 * integer stays int64")
  t.eq((i * 2):tolist(), { 2, 4, 6 }, "int64 * integer values")
  t.eq((10 - i):tolist(), { 9, 8, 7 }, "integer - int64")
  -- ... except where PyTorch promotes: a fractional number or true division makes floats
  t.eq((i + 0.5):tolist(), { 1.5, 2.5, 3.5 }, "int64 + fraction promotes")
  t.eq((i + 0.5).dtype, "float32", "int64 + fraction is float32")
  t.eq((i * 1.5):tolist(), { 1.5, 3, 4.5 }, "int64 * fraction")
  t.eq((i / 2):tolist(), { 0.5, 1, 1.5 }, "int64 / n is true division")
  t.eq(i:lt(1.5):tolist(), { true, false, false }, "int64 compared with a fraction")
  local mask = lr.tensor({ true, false })
  t.eq((mask * 2):tolist(), { 2, 0 }, "bool * n")
  t.eq((mask + 0.5):tolist(), { 1.5, 0.5 }, "bool + fraction")

  -- broadcasting
  local col = lr.tensor({ { 1 }, { 2 } })
  local row = lr.tensor({ 10, 20, 30 })
  local sum = col + row
  t.eq(sum.shape, { 2, 3 }, "broadcast shape")
  t.eq(sum:tolist(), { { 11, 21, 31 }, { 12, 22, 32 } }, "broadcast values")
  t.eq((lr.ones(2, 3) * lr.tensor({ 1, 2, 3 })):tolist(), { { 1, 2, 3 }, { 1, 2, 3 } }, "broadcast row")
  t.eq((lr.tensor(2) * row):tolist(), { 20, 40, 60 }, "0-dim tensor broadcasts")
end

---------------------------------------------------------------------------------------------------
-- unary math
---------------------------------------------------------------------------------------------------
do
  t.eq(lr.tensor({ -2, 0, 3 }):abs():tolist(), { 2, 0, 3 }, "abs")
  t.eq(lr.tensor({ -2, 0, 3 }):neg():tolist(), { 2, 0, -3 }, "neg")
  t.near(lr.tensor({ 0, 1 }):exp():tolist(), { 1, E }, TOL, "exp")
  t.near(lr.tensor({ 1, E }):log():tolist(), { 0, 1 }, TOL, "log")
  t.eq(lr.tensor({ 4, 9 }):sqrt():tolist(), { 2, 3 }, "sqrt")
  t.near(lr.tensor({ 4, 16 }):rsqrt():tolist(), { 0.5, 0.25 }, TOL, "rsqrt")
  t.near(lr.tensor({ 0, math.pi / 2 }):sin():tolist(), { 0, 1 }, TOL, "sin")
  t.near(lr.tensor({ 0, math.pi }):cos():tolist(), { 1, -1 }, TOL, "cos")
  t.eq(lr.tensor({ -1.5, 1.5 }):floor():tolist(), { -2, 1 }, "floor")
  t.eq(lr.tensor({ -1.5, 1.5 }):ceil():tolist(), { -1, 2 }, "ceil")
  t.eq(lr.tensor({ 0.5, 1.5, 2.5, -0.4 }):round():tolist(), { 0, 2, 2, -0 }, "round half to even")
  t.eq(lr.tensor({ -3, 0, 2 }):sign():tolist(), { -1, 0, 1 }, "sign")
  t.eq((lr.tensor({ 0, 1 }) / 0):isnan():tolist(), { true, false }, "isnan")
  t.eq(lr.tensor({ true, false }):logical_not():tolist(), { false, true }, "logical_not")
  local a, b = lr.tensor({ true, true, false }), lr.tensor({ true, false, false })
  t.eq(a:logical_and(b):tolist(), { true, false, false }, "logical_and")
  t.eq(a:logical_or(b):tolist(), { true, true, false }, "logical_or")
  t.eq(a:all():item(), false, "all")
  t.eq(a:any():item(), true, "any")
  t.eq(lr.tensor({ true, true }):all():item(), true, "all true")
end

---------------------------------------------------------------------------------------------------
-- comparisons
---------------------------------------------------------------------------------------------------
do
  local x = lr.tensor({ 1, 2, 3 })
  local z = lr.tensor({ 3, 2, 1 })
  t.eq(x:eq(z).dtype, "bool", "eq gives bool")
  t.eq(x:eq(z):tolist(), { false, true, false }, "eq")
  t.eq(x:ne(z):tolist(), { true, false, true }, "ne")
  t.eq(x:lt(z):tolist(), { true, false, false }, "lt")
  t.eq(x:le(z):tolist(), { true, true, false }, "le")
  t.eq(x:gt(z):tolist(), { false, false, true }, "gt")
  t.eq(x:ge(z):tolist(), { false, true, true }, "ge")
  t.eq(x:gt(1):tolist(), { false, true, true }, "gt number")
  t.eq(x:eq(2).dtype, "bool", "eq number gives bool")
  t.eq(lr.tensor({ { 1 }, { 3 } }):lt(x):tolist(), { { false, true, true }, { false, false, false } }, "broadcast lt")
  t.eq(x:equal(lr.tensor({ 1, 2, 3 })), true, "equal")
  t.eq(x:equal(z), false, "not equal")
  t.eq(x:allclose(x + 1e-7), true, "allclose")
  t.eq(x:allclose(x + 0.1), false, "not allclose")
  t.eq(x:allclose(x + 0.1, 0, 0.2), true, "allclose with atol")
end

---------------------------------------------------------------------------------------------------
-- reductions
---------------------------------------------------------------------------------------------------
do
  local m = lr.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
  t.eq(m:sum():item(), 21, "sum")
  t.eq(m:sum().ndim, 0, "full sum is 0-dim")
  t.eq(m:sum(0):tolist(), { 5, 7, 9 }, "sum(0)")
  t.eq(m:sum(1):tolist(), { 6, 15 }, "sum(1)")
  t.eq(m:sum(-1):tolist(), { 6, 15 }, "sum(-1)")
  t.eq(m:sum(1, true).shape, { 2, 1 }, "sum keepdim shape")
  t.eq(m:sum(1, true):tolist(), { { 6 }, { 15 } }, "sum keepdim values")
  t.eq(m:mean():item(), 3.5, "mean")
  t.eq(m:mean(0):tolist(), { 2.5, 3.5, 4.5 }, "mean(0)")
  t.eq(m:mean(1, true).shape, { 2, 1 }, "mean keepdim")
  -- 1..6: squared deviations from 3.5 sum to 17.5; unbiased variance 17.5 / 5 = 3.5
  t.near(m:var():item(), 3.5, TOL, "var")
  t.near(m:std():item(), math.sqrt(3.5), TOL, "std")
  t.near(m:var(1):tolist(), { 1, 1 }, TOL, "var(1)")
  -- columns {1,4}, {2,5}, {3,6}: variance (1.5^2 * 2) / 1 = 4.5
  t.near(m:std(0):tolist(), { math.sqrt(4.5), math.sqrt(4.5), math.sqrt(4.5) }, TOL, "std(0)")
  t.eq(m:std(0, true).shape, { 1, 3 }, "std keepdim")
  t.eq(m:prod():item(), 720, "prod")
  t.eq(m:prod(1):tolist(), { 6, 120 }, "prod(1)")
  t.eq(m:amax():item(), 6, "amax")
  t.eq(m:amax(0):tolist(), { 4, 5, 6 }, "amax(0)")
  t.eq(m:amin():item(), 1, "amin")
  t.eq(m:amin(1):tolist(), { 1, 4 }, "amin(1)")
  t.eq(m:amin(1, true):tolist(), { { 1 }, { 4 } }, "amin keepdim")

  local n = lr.tensor({ { 3, 9, 1 }, { 7, 2, 8 } })
  t.eq(n:argmax():item(), 1, "argmax over the flattened tensor")
  t.eq(n:argmin():item(), 2, "argmin over the flattened tensor")
  t.eq(n:argmax(1):tolist(), { 1, 2 }, "argmax(1)")
  t.eq(n:argmin(1):tolist(), { 2, 1 }, "argmin(1)")
  t.eq(n:argmax(0):tolist(), { 1, 0, 1 }, "argmax(0)")
  t.eq(n:argmax(0).dtype, "int64", "argmax dtype")
  t.eq(n:argmax(1, true).shape, { 2, 1 }, "argmax keepdim")
  t.eq(n:max():item(), 9, "max()")
  t.eq(n:min():item(), 1, "min()")
  local values, indices = n:max(1)
  t.eq(values:tolist(), { 9, 8 }, "max(1) values")
  t.eq(indices:tolist(), { 1, 2 }, "max(1) indices")
  t.eq(indices.dtype, "int64", "max indices dtype")
  values, indices = n:min(0)
  t.eq(values:tolist(), { 3, 2, 1 }, "min(0) values")
  t.eq(indices:tolist(), { 0, 1, 0 }, "min(0) indices")
  values, indices = n:max(-1, true)
  t.eq(values:tolist(), { { 9 }, { 8 } }, "max keepdim values")
  t.eq(indices.shape, { 2, 1 }, "max keepdim indices shape")

  t.eq(lr.tensor({ 3, 4 }):norm():item(), 5, "norm")
  t.near(lr.tensor({ { 3, 4 }, { 6, 8 } }):norm():item(), math.sqrt(125), TOL, "norm of a matrix")
  t.near(lr.tensor({ { 3, 4 }, { 6, 8 } }):norm(1):tolist(), { 5, 10 }, TOL, "norm(1)")
  t.near(lr.tensor({ { 3, 4 }, { 6, 8 } }):norm(0, true):tolist(), { { math.sqrt(45), math.sqrt(80) } }, TOL,
    "norm keepdim")
  t.near(lr.tensor({ 0, 0 }):logsumexp():item(), math.log(2), TOL, "logsumexp")
  t.near(lr.tensor({ { 0, math.log(3) }, { 1, 1 } }):logsumexp(1):tolist(), { math.log(4), 1 + math.log(2) }, TOL,
    "logsumexp(1)")
  t.eq(lr.tensor({ 1, 2 }, { dtype = "int64" }):sum().dtype, "int64", "integer sum stays int64")
end

---------------------------------------------------------------------------------------------------
-- matmul
---------------------------------------------------------------------------------------------------
do
  local a = lr.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
  local b = lr.tensor({ { 7, 8 }, { 9, 10 }, { 11, 12 } })
  -- row 1: 1*7+2*9+3*11 = 58, 1*8+2*10+3*12 = 64; row 2: 4*7+5*9+6*11 = 139, 4*8+5*10+6*12 = 154
  t.eq(a:matmul(b):tolist(), { { 58, 64 }, { 139, 154 } }, "matmul method")
  t.eq(lr.matmul(a, b):tolist(), { { 58, 64 }, { 139, 154 } }, "lr.matmul")
  t.eq(a:matmul(lr.tensor({ 1, 0, -1 })):tolist(), { -2, -2 }, "matrix @ vector")
  t.eq(lr.tensor({ 1, 2, 3 }):matmul(lr.tensor({ 4, 5, 6 })):item(), 32, "dot product")
  t.eq(lr.ones(5, 2, 3):matmul(lr.ones(3, 4)).shape, { 5, 2, 4 }, "batched matmul")
end

---------------------------------------------------------------------------------------------------
-- shape ops
---------------------------------------------------------------------------------------------------
do
  local r = lr.arange(6)
  t.eq(r:reshape(2, 3):tolist(), { { 0, 1, 2 }, { 3, 4, 5 } }, "reshape(2, 3)")
  t.eq(r:reshape({ 3, 2 }):tolist(), { { 0, 1 }, { 2, 3 }, { 4, 5 } }, "reshape({3, 2})")
  t.eq(r:reshape(-1, 2).shape, { 3, 2 }, "reshape infers -1")
  t.eq(lr.tensor({ 5 }):reshape({}).ndim, 0, "reshape to 0-dim")
  t.eq(r:view(3, 2):tolist(), { { 0, 1 }, { 2, 3 }, { 4, 5 } }, "view")
  t.eq(r:view({ 6, 1 }).shape, { 6, 1 }, "view table shape")

  local m = r:reshape(2, 3)
  t.eq(m:permute(1, 0):tolist(), { { 0, 3 }, { 1, 4 }, { 2, 5 } }, "permute 2-d")
  t.eq(m:permute({ 1, 0 }).shape, { 3, 2 }, "permute table")
  t.eq(m:transpose(0, 1):tolist(), { { 0, 3 }, { 1, 4 }, { 2, 5 } }, "transpose")
  t.eq(m:transpose(-1, -2).shape, { 3, 2 }, "transpose negative dims")
  t.eq(m:t():tolist(), { { 0, 3 }, { 1, 4 }, { 2, 5 } }, "t()")
  t.eq(m:flatten():tolist(), { 0, 1, 2, 3, 4, 5 }, "flatten")
  t.eq(m:t():contiguous():view(6):tolist(), { 0, 3, 1, 4, 2, 5 }, "contiguous then view")

  -- c[i][j][k] = 12 i + 4 j + k; permute(2, 0, 1) moves k first: p[k][i][j] = c[i][j][k]
  local c = lr.arange(24):reshape(2, 3, 4)
  local p = c:permute(2, 0, 1)
  t.eq(p.shape, { 4, 2, 3 }, "permute 3-d shape")
  t.eq(p:get(3, 1, 2), 12 + 8 + 3, "permute 3-d value")
  t.eq(c:transpose(0, 2).shape, { 4, 3, 2 }, "transpose 3-d")
  t.eq(c:flatten(1).shape, { 2, 12 }, "flatten(start)")
  t.eq(c:flatten(0, 1).shape, { 6, 4 }, "flatten(start, end)")
  t.eq(c:flatten(0, 1):get(5, 3), 23, "flatten values")
  t.eq(lr.tensor(3):flatten().shape, { 1 }, "flatten 0-dim")

  local s = lr.zeros(1, 3, 1)
  t.eq(s:squeeze().shape, { 3 }, "squeeze")
  t.eq(s:squeeze(0).shape, { 3, 1 }, "squeeze(0)")
  t.eq(s:squeeze(-1).shape, { 1, 3 }, "squeeze(-1)")
  t.eq(s:squeeze(1).shape, { 1, 3, 1 }, "squeeze of a non-1 dim is a no-op")
  local v = lr.tensor({ 1, 2, 3 })
  t.eq(v:unsqueeze(0).shape, { 1, 3 }, "unsqueeze(0)")
  t.eq(v:unsqueeze(1):tolist(), { { 1 }, { 2 }, { 3 } }, "unsqueeze(1)")
  t.eq(v:unsqueeze(-1).shape, { 3, 1 }, "unsqueeze(-1)")
  t.eq(v:unsqueeze(-2).shape, { 1, 3 }, "unsqueeze(-2)")

  local e = lr.tensor({ { 1 }, { 2 } })
  t.eq(e:expand(2, 3):tolist(), { { 1, 1, 1 }, { 2, 2, 2 } }, "expand")
  t.eq(e:expand({ -1, 2 }).shape, { 2, 2 }, "expand with -1")
  t.eq(v:expand(2, 3):tolist(), { { 1, 2, 3 }, { 1, 2, 3 } }, "expand adds leading dims")
end

---------------------------------------------------------------------------------------------------
-- slicing and indexing
---------------------------------------------------------------------------------------------------
do
  local v = lr.arange(10)
  t.eq(v:slice(0, 2, 5):tolist(), { 2, 3, 4 }, "slice start:stop")
  t.eq(v:slice(0, 1, nil, 3):tolist(), { 1, 4, 7 }, "slice start::step")
  t.eq(v:slice(0, -3):tolist(), { 7, 8, 9 }, "slice negative start to the end")
  t.eq(v:slice(0, 0, 10, 4):tolist(), { 0, 4, 8 }, "slice with step")
  t.eq(v:slice(0, 2, -5):tolist(), { 2, 3, 4 }, "slice negative stop")
  t.eq(v:slice(0, 8, 100):tolist(), { 8, 9 }, "slice stop past the end is clamped")
  t.eq(v:slice(0, nil, 3):tolist(), { 0, 1, 2 }, "slice with nil start")
  t.eq(v:slice(0, 5, 2).shape, { 0 }, "empty slice")

  local m = lr.arange(12):reshape(3, 4)
  t.eq(m:slice(1, 1, 3):tolist(), { { 1, 2 }, { 5, 6 }, { 9, 10 } }, "slice dim 1")
  t.eq(m:slice(-1, 0, nil, 2):tolist(), { { 0, 2 }, { 4, 6 }, { 8, 10 } }, "slice dim -1 with step")
  t.eq(m:narrow(0, 1, 2):tolist(), { { 4, 5, 6, 7 }, { 8, 9, 10, 11 } }, "narrow")
  t.eq(m:narrow(1, 3, 1):tolist(), { { 3 }, { 7 }, { 11 } }, "narrow dim 1")
  t.eq(m:select(1, 2):tolist(), { 2, 6, 10 }, "select(1, 2)")
  t.eq(m:select(0, -1):tolist(), { 8, 9, 10, 11 }, "select negative index")
  t.eq(m:index_select(0, lr.tensor({ 2, 0 }, { dtype = "int64" })):tolist(),
    { { 8, 9, 10, 11 }, { 0, 1, 2, 3 } }, "index_select rows")
  t.eq(m:index_select(1, lr.tensor({ 3, 3, 0 })):tolist(), { { 3, 3, 0 }, { 7, 7, 4 }, { 11, 11, 8 } },
    "index_select with a float index tensor")
  t.eq(m:masked_select(m:gt(8)):tolist(), { 9, 10, 11 }, "masked_select")
  t.eq(m:masked_fill(m:lt(2), -1):select(0, 0):tolist(), { -1, -1, 2, 3 }, "masked_fill")
  t.eq(m:masked_fill(m:lt(2), -1):select(0, 1):tolist(), { 4, 5, 6, 7 }, "masked_fill leaves the rest")
  t.eq(m:get(1, 2), 6, "get(1, 2)")
  t.eq(m:get(-1, -1), 11, "get negative indices")
  t.eq(lr.tensor(4):get(), 4, "get on 0-dim")
  t.eq(lr.tensor({ true, false }):get(1), false, "get on bool")

  -- views share storage with their base
  local base = lr.zeros(2, 3)
  base:select(0, 1):fill_(5)
  base:slice(1, 0, 1):fill_(1)
  t.eq(base:tolist(), { { 1, 0, 0 }, { 1, 5, 5 } }, "writes through views")
end

---------------------------------------------------------------------------------------------------
-- clamp, softmax, activations
---------------------------------------------------------------------------------------------------
do
  local c = lr.tensor({ -2, 0.5, 3 })
  t.eq(c:clamp(0, 1):tolist(), { 0, 0.5, 1 }, "clamp(min, max)")
  t.eq(c:clamp(0):tolist(), { 0, 0.5, 3 }, "clamp(min)")
  t.eq(c:clamp(nil, 1):tolist(), { -2, 0.5, 1 }, "clamp(nil, max)")

  -- row 1: e^k / (e + e^2 + e^3) for k = 1, 2, 3; row 2: all equal
  local x = lr.tensor({ { 1, 2, 3 }, { 1, 1, 1 } })
  local z = E + E ^ 2 + E ^ 3
  local s = x:softmax(1)
  t.near(s:tolist(), { { E / z, E ^ 2 / z, E ^ 3 / z }, { 1 / 3, 1 / 3, 1 / 3 } }, TOL, "softmax values")
  t.near(s:sum(1):tolist(), { 1, 1 }, TOL, "softmax rows sum to 1")
  t.near(x:softmax(-1):tolist(), s:tolist(), TOL, "softmax(-1)")
  -- columns {1, 1}, {2, 1}, {3, 1}: the top entry gets sigmoid(0), sigmoid(1), sigmoid(2)
  t.near(x:softmax(0):tolist(), { { 0.5, 1 / (1 + E ^ -1), 1 / (1 + E ^ -2) }, { 0.5, 1 / (1 + E), 1 / (1 + E ^ 2) } },
    TOL, "softmax(0)")
  local ls = x:log_softmax(1)
  t.near(ls:tolist(), { { 1 - math.log(z), 2 - math.log(z), 3 - math.log(z) },
    { -math.log(3), -math.log(3), -math.log(3) } }, TOL, "log_softmax values")
  t.near(ls:exp():sum(1):tolist(), { 1, 1 }, TOL, "exp(log_softmax) rows sum to 1")
  t.near(lr.nn.softmax(x, 1):tolist(), s:tolist(), TOL, "lr.nn.softmax")
  t.near(lr.nn.log_softmax(x, 1):tolist(), ls:tolist(), TOL, "lr.nn.log_softmax")

  local a = lr.tensor({ -1, 0, 2 })
  t.eq(a:relu():tolist(), { 0, 0, 2 }, "relu")
  t.eq(lr.nn.relu(a):tolist(), { 0, 0, 2 }, "lr.nn.relu")
  -- sigmoid(x) = 1 / (1 + e^-x)
  t.near(a:sigmoid():tolist(), { 1 / (1 + E), 0.5, 1 / (1 + E ^ -2) }, TOL, "sigmoid")
  t.near(lr.nn.sigmoid(a):tolist(), { 1 / (1 + E), 0.5, 1 / (1 + E ^ -2) }, TOL, "lr.nn.sigmoid")
  -- tanh(x) = (e^2x - 1) / (e^2x + 1)
  local th = function(v) return (E ^ (2 * v) - 1) / (E ^ (2 * v) + 1) end
  t.near(a:tanh():tolist(), { th(-1), 0, th(2) }, TOL, "tanh")
  t.near(lr.nn.tanh(a):tolist(), { th(-1), 0, th(2) }, TOL, "lr.nn.tanh")
  -- gelu(x) = x * Phi(x); Phi(1) = 0.8413447460685429, Phi(2) = 0.9772498680518208
  t.near(a:gelu():tolist(), { -(1 - 0.8413447460685429), 0, 2 * 0.9772498680518208 }, TOL, "gelu")
  t.near(lr.nn.gelu(a):tolist(), { -(1 - 0.8413447460685429), 0, 2 * 0.9772498680518208 }, TOL, "lr.nn.gelu")
  -- silu(x) = x * sigmoid(x)
  t.near(lr.nn.silu(a):tolist(), { -1 / (1 + E), 0, 2 / (1 + E ^ -2) }, TOL, "silu")
end

---------------------------------------------------------------------------------------------------
-- lr.nn losses
---------------------------------------------------------------------------------------------------
do
  local input = lr.tensor({ 1, 2, 3 })
  local target = lr.tensor({ 2, 2, 5 })
  -- differences -1, 0, -2
  t.near(lr.nn.l1_loss(input, target):item(), 1, TOL, "l1 mean")
  t.near(lr.nn.l1_loss(input, target, "sum"):item(), 3, TOL, "l1 sum")
  t.eq(lr.nn.l1_loss(input, target, "none"):tolist(), { 1, 0, 2 }, "l1 none")
  t.near(lr.nn.mse_loss(input, target):item(), 5 / 3, TOL, "mse mean")
  t.near(lr.nn.mse_loss(input, target, "mean"):item(), 5 / 3, TOL, "mse explicit mean")
  t.near(lr.nn.mse_loss(input, target, "sum"):item(), 5, TOL, "mse sum")
  t.eq(lr.nn.mse_loss(input, target, "none"):tolist(), { 1, 0, 4 }, "mse none")
  t.eq(lr.nn.mse_loss(input, target).ndim, 0, "mse mean is 0-dim")
  -- smooth L1 (beta 1): 0.5 d^2 where |d| < 1, else |d| - 0.5; d = -1, -0.5, -2 -> 0.5, 0.125, 1.5
  local t2 = lr.tensor({ 2, 2.5, 5 })
  t.eq(lr.nn.smooth_l1_loss(input, t2, "none"):tolist(), { 0.5, 0.125, 1.5 }, "smooth_l1 none")
  t.near(lr.nn.smooth_l1_loss(input, t2, "sum"):item(), 2.125, TOL, "smooth_l1 sum")
  t.near(lr.nn.smooth_l1_loss(input, t2):item(), 2.125 / 3, TOL, "smooth_l1 mean")
  t.near(lr.nn.mse_loss(input, lr.tensor({ 2, 2, 5 }, { dtype = "int64" })):item(), 5 / 3, TOL,
    "integer targets are converted")

  -- cross entropy: -log softmax(logits)[class]; row 1: log(e + e^2 + e^3) - 3, row 2: log 3
  local logits = lr.tensor({ { 1, 2, 3 }, { 1, 1, 1 } })
  local classes = lr.tensor({ 2, 0 }, { dtype = "int64" })
  local l1, l2 = math.log(E + E ^ 2 + E ^ 3) - 3, math.log(3)
  t.near(lr.nn.cross_entropy(logits, classes):item(), (l1 + l2) / 2, TOL, "cross_entropy mean")
  t.near(lr.nn.cross_entropy(logits, classes, "sum"):item(), l1 + l2, TOL, "cross_entropy sum")
  t.near(lr.nn.cross_entropy(logits, classes, "none"):tolist(), { l1, l2 }, TOL, "cross_entropy none")
  t.near(lr.nn.cross_entropy(logits, lr.tensor({ 2, 0 }, { dtype = "int32" })):item(), (l1 + l2) / 2, TOL,
    "cross_entropy int32 classes")
  -- class probabilities: one-hot rows give the same loss as the class ids
  local probs = lr.tensor({ { 0, 0, 1 }, { 1, 0, 0 } })
  t.near(lr.nn.cross_entropy(logits, probs):item(), (l1 + l2) / 2, TOL, "cross_entropy with probabilities")

  -- BCE with logits: x=0, y=1 -> log 2; x=2, y=0 -> log(1 + e^2)
  local x, y = lr.tensor({ 0, 2 }), lr.tensor({ 1, 0 })
  local b1, b2 = math.log(2), math.log(1 + E ^ 2)
  t.near(lr.nn.binary_cross_entropy_with_logits(x, y):item(), (b1 + b2) / 2, TOL, "bce mean")
  t.near(lr.nn.binary_cross_entropy_with_logits(x, y, "sum"):item(), b1 + b2, TOL, "bce sum")
  t.near(lr.nn.binary_cross_entropy_with_logits(x, y, "none"):tolist(), { b1, b2 }, TOL, "bce none")
  t.near(lr.nn.binary_cross_entropy_with_logits(x, lr.tensor({ true, false })):item(), (b1 + b2) / 2, TOL,
    "bce with bool targets")

  -- dropout: p = 0 keeps everything, p = 1 drops everything, eval mode is the identity
  local ones = lr.ones(50)
  t.eq(lr.nn.dropout(ones, 0):sum():item(), 50, "dropout p=0")
  t.eq(lr.nn.dropout(ones, 1):sum():item(), 0, "dropout p=1")
  t.eq(lr.nn.dropout(ones, 0.5, false):sum():item(), 50, "dropout in eval mode")
  lr.manual_seed(3)
  for _, v in ipairs(lr.nn.dropout(ones, 0.5):tolist()) do
    t.truthy(v == 0 or v == 2, "dropout scales kept values by 1 / (1 - p)")
  end
end

---------------------------------------------------------------------------------------------------
-- cat / stack / where
---------------------------------------------------------------------------------------------------
do
  local a, b = lr.tensor({ { 1, 2 } }), lr.tensor({ { 3, 4 } })
  t.eq(lr.cat({ a, b }):tolist(), { { 1, 2 }, { 3, 4 } }, "cat dim 0")
  t.eq(lr.cat({ a, b }, 1):tolist(), { { 1, 2, 3, 4 } }, "cat dim 1")
  t.eq(lr.cat({ a, b }, -1).shape, { 1, 4 }, "cat dim -1")
  t.eq(lr.cat({ a }):tolist(), { { 1, 2 } }, "cat of one tensor")
  local u, w = lr.tensor({ 1, 2 }), lr.tensor({ 3, 4 })
  t.eq(lr.stack({ u, w }):tolist(), { { 1, 2 }, { 3, 4 } }, "stack dim 0")
  t.eq(lr.stack({ u, w }, 1):tolist(), { { 1, 3 }, { 2, 4 } }, "stack dim 1")
  t.eq(lr.stack({ u, w, u }).shape, { 3, 2 }, "stack three")

  local cond = lr.tensor({ true, false, true })
  local x, y = lr.tensor({ 1, 2, 3 }), lr.tensor({ 4, 5, 6 })
  t.eq(lr.where(cond, x, y):tolist(), { 1, 5, 3 }, "where(t, t)")
  t.eq(lr.where(cond, x, 0):tolist(), { 1, 0, 3 }, "where(t, n)")
  t.eq(lr.where(cond, -1, y):tolist(), { -1, 5, -1 }, "where(n, t)")
  t.eq(lr.where(cond, 1, 0):tolist(), { 1, 0, 1 }, "where(n, n)")
  t.eq(lr.where(cond, 1, 0).dtype, "int64", "where of two integers is int64, as in PyTorch")
  t.eq(lr.where(cond, 1, 0.5).dtype, "float32", "where with a fraction is float32")
  t.eq(lr.where(x:gt(1), x, y):tolist(), { 4, 2, 3 }, "where with a comparison")
  t.eq(lr.where(lr.tensor({ { true }, { false } }), x, y):tolist(), { { 1, 2, 3 }, { 4, 5, 6 } }, "where broadcasts")
  t.eq(lr.where(cond, lr.tensor({ 1, 2, 3 }, { dtype = "int64" }), 0.5):tolist(), { 1, 0.5, 3 },
    "where promotes a fractional number")
end

---------------------------------------------------------------------------------------------------
-- autograd
---------------------------------------------------------------------------------------------------
do
  local x = lr.tensor({ 1, 2, 3 }, { requires_grad = true })
  local y = (x * x):sum()
  t.eq(y.requires_grad, true, "loss requires grad")
  t.eq(y:item(), 14, "loss value")
  y:backward()
  t.eq(x.grad:tolist(), { 2, 4, 6 }, "d(sum x^2)/dx = 2x")
  t.eq(x.grad.requires_grad, false, "grad does not require grad")
  -- gradients accumulate until zero_grad
  local y3 = (x * 3):sum()
  y3:backward()
  t.eq(x.grad:tolist(), { 5, 7, 9 }, "gradients accumulate")
  x:zero_grad()
  t.eq(x.grad, nil, "zero_grad clears grad")
  -- explicit output gradient
  local z = x * 2
  z:backward(lr.tensor({ 1, 10, 100 }))
  t.eq(x.grad:tolist(), { 2, 20, 200 }, "backward(gradient)")

  -- chain rule through a matrix product: d/dW sum(v @ W) = v^T 1
  local W = lr.ones(2, 2, { requires_grad = true })
  lr.tensor({ { 3, 4 } }):matmul(W):sum():backward()
  t.eq(W.grad:tolist(), { { 3, 3 }, { 4, 4 } }, "matmul gradient")
  -- mean over 4 elements spreads 1/4 to each
  local q = lr.zeros(4, { requires_grad = true })
  q:mean():backward()
  t.eq(q.grad:tolist(), { 0.25, 0.25, 0.25, 0.25 }, "mean gradient")

  local r, extra = lr.no_grad(function() return x * 2, 7 end)
  t.eq(r.requires_grad, false, "no_grad result does not require grad")
  t.eq(r:tolist(), { 2, 4, 6 }, "no_grad result value")
  t.eq(extra, 7, "no_grad returns every value")
  t.eq(lr.no_grad(function(p, q2) return p + q2 end, 1, 2), 3, "no_grad passes arguments")
  t.eq(select("#", lr.no_grad(function() end)), 0, "no_grad with no results")
  t.eq((x * 2).requires_grad, true, "grad mode is back after no_grad")
  t.raises(function() lr.no_grad(function() error("inner failure") end) end, "inner failure", "no_grad re-raises")
  t.eq((x * 2).requires_grad, true, "grad mode is back after a failing no_grad")

  t.eq(x:detach().requires_grad, false, "detach")
  local leaf = lr.tensor({ 1 }):requires_grad_()
  t.eq(leaf.requires_grad, true, "requires_grad_()")
  t.eq(leaf:requires_grad_(false).requires_grad, false, "requires_grad_(false)")
  t.eq(x:clone().is_leaf, false, "clone of a leaf that requires grad is not a leaf")
end

---------------------------------------------------------------------------------------------------
-- in-place ops
---------------------------------------------------------------------------------------------------
do
  local a = lr.tensor({ 1, 2, 3 })
  local r = a:add_(1)
  t.eq(a:tolist(), { 2, 3, 4 }, "add_ changes the tensor")
  t.eq(r:tolist(), { 2, 3, 4 }, "add_ returns the result")
  a:mul_(2)
  t.eq(a:tolist(), { 4, 6, 8 }, "mul_")
  a:sub_(lr.tensor({ 1, 1, 1 }))
  t.eq(a:tolist(), { 3, 5, 7 }, "sub_ with a tensor")
  a:div_(2)
  t.eq(a:tolist(), { 1.5, 2.5, 3.5 }, "div_")
  a:add_(lr.tensor({ 1, 2, 3 }))
  t.eq(a:tolist(), { 2.5, 4.5, 6.5 }, "add_ with a tensor")
  t.truthy(rawequal(a:fill_(7), a), "fill_ returns self")
  t.eq(a:tolist(), { 7, 7, 7 }, "fill_")
  t.truthy(rawequal(a:zero_(), a), "zero_ returns self")
  t.eq(a:tolist(), { 0, 0, 0 }, "zero_")
  a:copy_(lr.tensor({ 9, 8, 7 }))
  t.eq(a:tolist(), { 9, 8, 7 }, "copy_")
  a:copy_(lr.tensor(5))
  t.eq(a:tolist(), { 5, 5, 5 }, "copy_ broadcasts")
  a:copy_(lr.tensor({ 1, 2, 3 }, { dtype = "int64" }))
  t.eq(a.dtype, "float32", "copy_ keeps the destination dtype")
  t.eq(a:tolist(), { 1, 2, 3 }, "copy_ converts")
  -- the result of an in-place op is the same tensor
  local i = lr.tensor({ 1, 2 }, { dtype = "int64" })
  i:add_(3)
  t.eq(i:tolist(), { 4, 5 }, "add_ on int64")
  t.raises(function() i:add_(0.5) end, "Tensor:add_", "int64 add_ of a fraction cannot be cast back")
end

---------------------------------------------------------------------------------------------------
-- release, #, tostring
---------------------------------------------------------------------------------------------------
do
  local r = lr.ones(2, 2)
  t.eq(r:is_released(), false, "not released yet")
  r:release()
  t.eq(r:is_released(), true, "released")
  t.raises(function() return r:sum() end, "was released", "method after release")
  t.raises(function() return r + 1 end, "was released", "arithmetic after release")
  t.raises(function() return lr.ones(2) + r end, "bad argument #2 to 'Tensor arithmetic' (Tensor was released",
    "released right operand")
  t.raises(function() return lr.ones(2):mul(r) end, "was released", "released method argument")
  t.raises(function() return lr.where(lr.tensor({ true }), r, 1) end,
    "bad argument #2 to 'lr.where' (Tensor was released",
    "released where argument")
  t.raises(function() return r.shape end, "was released", "property after release")
  t.raises(function() return lr.cat({ r }) end, "bad argument #1 to 'lr.cat' (entry 1 is a Tensor that was released",
    "released tensor in a list")
  t.eq(tostring(r), "Tensor (released)", "tostring after release")
  r:release() -- a second release is harmless
  t.eq(r:is_released(), true, "still released")

  t.eq(#lr.zeros(4, 2), 4, "#t is the first dimension")
  t.eq(#lr.tensor({}), 0, "#t of an empty tensor")
  t.raises(function() return #lr.tensor(1) end, "0-dim", "# of a 0-dim tensor")

  local text = tostring(lr.zeros(2, 3))
  t.truthy(text:find("Tensor(float32", 1, true), "tostring names the dtype")
  t.truthy(text:find("shape [2, 3]", 1, true), "tostring names the shape")
  t.truthy(text:find("cpu", 1, true), "tostring names the device")
  t.truthy(tostring(lr.tensor({ 1 }, { dtype = "int64" })):find("Tensor(int64", 1, true), "tostring int64")
  t.truthy(not tostring(lr.zeros(100)):find("\n", 1, true), "tostring of a large tensor has no values")
end

---------------------------------------------------------------------------------------------------
-- error paths
---------------------------------------------------------------------------------------------------
do
  local x = lr.arange(6):reshape(2, 3)

  -- argument types and numbering (functions count from 1, methods from the first argument after self)
  t.raises(function() lr.zeros("a") end, "bad argument #1 to 'lr.zeros'", "zeros with a string")
  t.raises(function() lr.zeros("a") end, "expected shape", "zeros with a string says what it wanted")
  t.raises(function() lr.zeros({ 2, "x" }) end, "shape entries must be integers", "bad shape entry")
  t.raises(function() lr.zeros(2.5) end, "expected integer", "fractional size")
  t.raises(function() lr.zeros(2, 3, {}, 4) end, "bad argument #4 to 'lr.zeros' (unexpected extra argument",
    "extra argument")
  t.raises(function() lr.ones(2, "float64") end, "bad argument #2 to 'lr.ones'", "options must be a table")
  t.raises(function() x:reshape("a") end, "bad argument #1 to 'Tensor:reshape'", "method arg numbering")
  t.raises(function() x:reshape(4, 2) end, "shape '[4, 2]' is invalid for input of size 6", "bad reshape")
  t.raises(function() x:add("a") end, "bad argument #1 to 'Tensor:add' (expected Tensor or number, got string)",
    "binary op with a string")
  t.raises(function() return x + "a" end, "expected Tensor or number, got string", "metamethod with a string")
  t.raises(function() return x + {} end, "expected Tensor or number, got table", "metamethod with a table")
  t.raises(function() x:slice(0, 0, 2, 0) end, "bad argument #4 to 'Tensor:slice' (slice step must be positive)",
    "slice step")
  t.raises(function() x:clamp() end, "bad argument #1 to 'Tensor:clamp'", "clamp without bounds")
  t.raises(function() x:softmax() end, "bad argument #1 to 'Tensor:softmax' (expected number, got no value)",
    "softmax without dim")
  t.raises(function() lr.nn.softmax(x) end, "bad argument #2 to 'lr.nn.softmax'", "lr.nn.softmax numbering")
  t.raises(function() lr.tensor("abc") end, "bad argument #1 to 'lr.tensor'", "lr.tensor with a string")
  t.raises(function() lr.zeros() end, "bad argument #1 to 'lr.zeros' (expected shape", "zeros without a shape")
  t.raises(function() lr.full(3) end, "bad argument #2 to 'lr.full' (expected fill value", "full without a value")
  t.raises(function() lr.randint(0, 3) end, "bad argument #3 to 'lr.randint' (expected shape", "randint without shape")
  t.raises(function() lr.arange("a") end, "bad argument #1 to 'lr.arange' (expected number, got string)", "arange")
  t.raises(function() lr.arange(0, 5, 0) end, "step must not be 0", "arange step 0")
  t.raises(function() lr.randint(5, 5, { 2 }) end, "bad argument #2 to 'lr.randint' (high must be greater than low)",
    "randint empty range")
  t.raises(function() lr.randperm(-1) end, "bad argument #1 to 'lr.randperm'", "randperm negative")
  t.raises(function() lr.cat({}) end, "expected a non-empty list of Tensors", "cat of nothing")
  t.raises(function() lr.stack({ x, 3 }) end, "bad argument #1 to 'lr.stack' (entry 2 is a number, expected Tensor)",
    "stack with a number")
  t.raises(function() lr.cat({ lr.zeros(2, 3), lr.zeros(2, 4) }) end, "Sizes of tensors must match", "cat sizes")
  t.raises(function() x:index_select(0, { 0 }) end, "bad argument #2 to 'Tensor:index_select'", "index_select table")
  t.raises(function() lr.manual_seed("x") end, "bad argument #1 to 'lr.manual_seed'", "manual_seed type")

  -- dimensions and indices out of range name the valid range
  t.raises(function() x:sum(5) end, "dimension 5 out of range for a tensor with 2 dimension(s) (valid: -2 to 1)",
    "sum dim out of range")
  t.raises(function() x:sum(5) end, "bad argument #1 to 'Tensor:sum'", "sum dim argument number")
  t.raises(function() x:max(-3) end, "valid: -2 to 1", "max dim out of range")
  t.raises(function() x:transpose(0, 2) end, "bad argument #2 to 'Tensor:transpose'", "transpose second dim")
  t.raises(function() x:size(2) end, "valid: -2 to 1", "size dim out of range")
  t.raises(function() x:softmax(2) end, "valid: -2 to 1", "softmax dim out of range")
  t.raises(function() x:unsqueeze(3) end, "valid: -3 to 2", "unsqueeze dim out of range")
  t.raises(function() x:squeeze(2) end, "valid: -2 to 1", "squeeze dim out of range")
  t.raises(function() x:flatten(0, 2) end, "bad argument #2 to 'Tensor:flatten'", "flatten end out of range")
  t.raises(function() x:select(0, 2) end, "index 2 out of range for dimension 0 of size 2", "select index")
  t.raises(function() x:get(0, 3) end, "bad argument #2 to 'Tensor:get' (index 3 out of range", "get index")
  t.raises(function() x:get(0) end, "get needs 2 indices, got 1", "get index count")
  t.raises(function() x:permute(0) end, "permute needs 2 dimensions, got 1", "permute count")
  t.raises(function() lr.cat({ x, x }, 2) end, "Dimension out of range", "cat dim")

  -- dtypes and options
  t.raises(function() lr.zeros(2, { dtype = "float33" }) end, "unknown dtype 'float33'", "unknown dtype")
  t.raises(function() lr.zeros(2, { dtype = "float33" }) end, "'float32', 'float64', 'float16', 'bfloat16', 'int64'",
    "unknown dtype lists the valid ones")
  t.raises(function() x:to("float33") end, "unknown dtype 'float33'", "to() unknown dtype")
  t.raises(function() lr.zeros(2, { dtpye = "float64" }) end,
    "unknown tensor option 'dtpye' (valid: 'dtype', 'device', 'requires_grad')", "unknown option key")
  t.raises(function() lr.tensor({ 1 }, { 5 }) end, "unknown tensor option [1]", "positional option")
  t.raises(function() lr.zeros(2, { dtype = 32 }) end, "options.dtype must be a string", "dtype type")
  t.raises(function() lr.zeros(2, { requires_grad = 1 }) end, "options.requires_grad must be a boolean",
    "requires_grad type")
  t.raises(function() lr.zeros(2, { device = "tpu" }) end, "unknown device 'tpu'", "unknown device")
  t.raises(function() lr.tensor({ 1 }, { dtype = "int64", requires_grad = true }) end,
    "Only Tensors of floating point", "integer tensors cannot require grad")

  -- LibTorch errors keep their message but lose the C++ backtrace
  local msg = error_of(function() return x:matmul(lr.zeros(2, 3)) end)
  t.truthy(msg:find("Tensor:matmul: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)", 1, true),
    "matmul mismatch message: " .. msg)
  t.truthy(not msg:find("Exception raised from", 1, true), "no C++ backtrace: " .. msg)
  msg = error_of(function() return lr.matmul(x, lr.zeros(4)) end)
  t.truthy(msg:find("lr.matmul:", 1, true) and not msg:find("Exception raised from", 1, true), "lr.matmul mismatch")
  msg = error_of(function() return x + lr.zeros(4) end)
  t.truthy(msg:find("must match the size of tensor b (4)", 1, true), "broadcast mismatch: " .. msg)
  t.truthy(not msg:find("Exception raised from", 1, true), "no backtrace in broadcast mismatch")
  t.truthy(msg:find("test_tensor.lua:", 1, true), "errors name the recipe line: " .. msg)

  -- nested tables
  t.raises(function() lr.tensor({ { 1, 2 }, { 3 } }) end, "ragged nested table", "ragged rows")
  t.raises(function() lr.tensor({ { 1, 2 }, { 3 } }) end, "has 1 entries, expected 2", "ragged rows detail")
  t.raises(function() lr.tensor({ 1, { 2 } }) end, "ragged nested table", "ragged depth")
  t.raises(function() lr.tensor({ { 1 }, 2 }) end, "ragged nested table", "ragged depth the other way")
  t.raises(function() lr.tensor({ dtype = "int64" }) end,
    "nested tables must be lists of numbers or booleans, found a key 'dtype'",
    "options given as data")
  t.raises(function() lr.tensor({ 1, true }) end, "mixes numbers and booleans", "mixed entries")
  t.raises(function() lr.tensor({ 1, "2" }) end, "nested tables may hold only numbers or booleans, found a string",
    "string entry")

  -- item, backward, losses
  t.raises(function() x:item() end, "item() needs a tensor with exactly one element, this one has shape [2, 3]",
    "item on many elements")
  local w = lr.ones(3, { requires_grad = true })
  t.raises(function() (w * 2):backward() end, "backward() without a gradient needs a scalar; this tensor has shape [3]",
    "backward on a non-scalar")
  t.raises(function() lr.ones(1):backward() end, "does not require grad", "backward without requires_grad")
  t.raises(function() lr.no_grad(function() return (w * 2):sum() end):backward() end, "does not require grad",
    "backward of a no_grad result")
  t.raises(function() lr.no_grad(5) end, "bad argument #1 to 'lr.no_grad' (expected function, got number)",
    "no_grad needs a function")
  t.raises(function() lr.nn.mse_loss(lr.zeros(3), lr.zeros(3), "avg") end,
    "bad argument #3 to 'lr.nn.mse_loss' (expected one of 'mean', 'sum', 'none', got 'avg')", "reduction name")
  t.raises(function() lr.nn.l1_loss(lr.zeros(3), lr.zeros(2)) end,
    "bad argument #2 to 'lr.nn.l1_loss' (target shape [2] differs from input shape [3])", "loss shapes")
  t.raises(function() lr.nn.cross_entropy(lr.zeros(2, 3), lr.zeros(2)) end, "expected class indices",
    "cross_entropy float class ids")
  t.raises(function() lr.nn.dropout(x, 1.5) end, "bad argument #2 to 'lr.nn.dropout' (p must be in [0, 1])",
    "dropout p")

  -- bad self, unknown members
  local sum = x.sum
  t.raises(function() sum(5) end, "bad self to 'Tensor:sum' (expected Tensor, got number)", "bad self")
  t.raises(function() x.add({}, x) end, "bad self to 'Tensor:add' (expected Tensor, got table)", "bad self table")
  t.raises(function() x.reshape(nil, 2) end, "bad self to 'Tensor:reshape'", "bad self nil")
  t.raises(function() return x.foo end, "Tensor has no method or property 'foo'", "unknown property")
  t.raises(function() x:foo() end, "Tensor has no method or property 'foo'", "unknown method")
  t.raises(function() return x[1] end, "Tensor cannot be indexed with a number key", "numeric index")
  t.raises(function() return x[1] end, "t:get(i, ...)", "numeric index hint")
end

t.done()
