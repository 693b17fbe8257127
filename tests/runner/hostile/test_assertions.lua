-- expect() on hostile values: cycles, metatables, huge and deep values.
-- Outcomes must be right, messages bounded, and nothing may overflow.
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

test("cycle_equal", function()
  local a, b = {}, {}; a.self = a; b.self = b
  expect(a):eq(b)
end)
test("cycle_mutual_differs", function()
  local a, b = {}, {}; a.n = b; b.n = a
  local c, d = {}, {}; c.n = d; d.n = { n = c, z = 1 }
  expect(a):eq(c)
end)
test("meta_eq_honoured", function()
  local mt = { __eq = function() return true end }
  expect(setmetatable({ 1 }, mt)):eq(setmetatable({ 2 }, mt))
end)
test("meta_raw_walk", function()
  local t = setmetatable({}, {
    __index = function() error("__index called") end,
    __pairs = function() error("__pairs called") end,
    __len = function() return "not a number" end,
  })
  expect(t):eq({ a = 1 })
end)
test("tostring_key", function()
  local k = setmetatable({}, { __tostring = function() error("key tostring") end })
  expect({ [k] = 1 }):eq({})
end)
test("negzero_equal", function() expect(-0.0):eq(0.0) end)
test("int_float_equal", function() expect(1):eq(1.0) end)
test("nan_differs", function() expect(0 / 0):eq(0 / 0) end)
test("long_string", function()
  local s = string.rep("a", 1024 * 1024)
  expect(s .. "b"):eq(s .. "c")
end)
test("big_table", function()
  local a, b = {}, {}
  for i = 1, 100000 do a[i] = i; b[i] = i end
  b[100000] = 0
  expect(a):eq(b)
end)
test("deep_nesting", function()
  local a, b = {}, {}
  local x, y = a, b
  for _ = 1, 50000 do x.n = {}; y.n = {}; x, y = x.n, y.n end
  x.v = 1
  expect(a):eq(b)
end)
test("raises_non_function", function() expect(42):raises() end)
test("near_non_number", function() expect(1):near("x") end)
