-- Reruns (--reruns, reruns = N): each test counts its attempts in a file
-- of the run's directory (the harness removes them between runs).
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

local function attempt(name)
  local path = name .. ".count"
  local f = io.open(path, "r")
  local n = f and tonumber(f:read("a")) or 0
  if f then f:close() end
  n = n + 1
  f = assert(io.open(path, "w"))
  f:write(tostring(n))
  f:close()
  return n
end

test("passes", function() attempt("passes") end)

test("fails once then passes", function()
  local n = attempt("once")
  print("attempt " .. n)
  expect(n, "attempt " .. n):ge(2)
end)

test("always fails", function()
  local n = attempt("always")
  e2e.fail("still broken on attempt " .. n)
end)

e2e.fixture("shaky", function()
  if attempt("shaky") == 1 then error("setup broke on attempt 1") end
  return true
end)
test("errors in setup once", function(shaky) expect(shaky):eq(true) end)

test("its own reruns", { reruns = 3 }, function()
  expect(attempt("own")):ge(4)
end)

test("known issue fails", { known_issue = "KI-099: never rerun" }, function()
  attempt("ki")
  e2e.fail("known")
end)

e2e.fixture("broken_for_the_file", { scope = "file" }, function()
  attempt("filefix")
  error("the file's fixture is broken")
end)
test("file fixture broken", function(broken_for_the_file) end) -- luacheck: ignore 212 (used for its effect)
