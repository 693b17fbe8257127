local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

test("passes", function()
  print("output of a passing test")
  expect(1 + 1):eq(2)
end)

test("fails with assertion", function()
  print("output of a failing test")
  expect("hello"):eq("world")
end)

test("errors with lua error", function()
  local t = nil
  return t.x
end)

test("static skip", { skip = "not supported here" }, function() error("must not run") end)

test("runtime skip", function() e2e.requires("pause") end)

test("known issue fails", { known_issue = "KI-001: product returns 500" }, function()
  expect(500):eq(200)
end)

test("known issue passes", { known_issue = "KI-002: fixed upstream?" }, function() end)

test("needs platform", { platform = true }, function() end)

test("slow one", { marks = { "e2e_slow" } }, function() end)

e2e.describe("files", function()
  test("read works", function() end)
  e2e.describe("nested", function()
    test("write works", function() end)
  end)
end)

test("assertion messages", function()
  expect(function() expect({ 1, 2, 3 }):eq({ 1, 2, 4 }) end):raises("first difference at [3]")
  expect(function() expect("abc"):match("^x") end):raises("to match pattern")
  expect(function() expect({ 1, 2 }):contains(3) end):raises("to contain")
  expect(function() expect(1):gt(2) end):raises("greater than")
  expect(function() expect(nil):truthy() end):raises("truthy")
  expect(function() expect("x"):type("number") end):raises("type number")
  expect(function() expect("abc"):len(2) end):raises("expected length 2")
  expect(function() expect(5):ne(5) end):raises("different")
  expect(function() expect(1):eq(2) end):raises { pattern = "test_outcomes%.lua:%d+: expected values to be equal" }
  local a = ("line\n"):rep(5) .. "alpha\n"
  local err = expect(function() expect(a):eq(("line\n"):rep(5) .. "beta\n") end):raises("diff")
  expect(err.message):contains("  - beta"):contains("  + alpha")
  expect(function() expect(function() end):raises() end):raises("expected the function to raise")
end)

test("eventually passes", function()
  local n = 0
  local v = e2e.eventually(function()
    n = n + 1
    return n >= 3 and n
  end, { timeout = 5, interval = 0.01 })
  expect(v):eq(3)
end)

test("eventually times out", function()
  e2e.eventually(function() return false end, { timeout = 0.2, interval = 0.05 })
end)

test("typo in global", function() return undefined_global_name end) -- luacheck: ignore 113 (the typo)
