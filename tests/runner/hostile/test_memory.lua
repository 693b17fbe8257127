-- A test that allocates without bound hits the Lua heap ceiling
-- (--max-memory) as a clear ERROR; the worker survives for the next test
-- and the failing test's teardown still runs.
local e2e = require "e2e"

e2e.fixture("marker", function()
  return 1, function() print("teardown ran") ; e2e.fail("teardown ran after memory error") end
end)

e2e.test("bomb", function(marker) -- luacheck: ignore 212 (used for its effect)
  local t = {} -- luacheck: ignore 241 (filled only to exhaust the heap)
  for i = 1, 1000 do t[i] = string.rep("x", 16 * 1024 * 1024, tostring(i)) end
end)
e2e.test("after_bomb", function() local s = string.rep("y", 1024 * 1024); assert(#s == 1024 * 1024) end)
