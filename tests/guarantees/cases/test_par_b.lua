-- (f) -n 2: this file and test_par_a.lua run in different workers, each
-- with sandboxes and a failing test.
local e2e = require "e2e"
local test, expect = e2e.test, e2e.expect

test("b fails", function(base_sandbox, sandbox_factory)
  local s = sandbox_factory {}
  print("created " .. base_sandbox.id .. " " .. s.id .. " in worker " .. tostring(e2e.worker_id))
  e2e.sleep(1)  -- overlap with the other worker
  expect(1):eq(2)
end)

test("b passes", function(sandbox_factory)
  local s = sandbox_factory {}
  expect(s:is_running()):eq(true)
end)
