-- (e) SIGKILL of the runner alone: this file would go on after its first
-- test (which holds 3 sandboxes while the driver kills the runner) and
-- create another sandbox; a worker orphaned by the kill must not be able
-- to do that behind the guardian's back.
local e2e = require "e2e"
local test = e2e.test

test("holds three sandboxes briefly", function(base_sandbox, sandbox_factory)
  local a, b = sandbox_factory {}, sandbox_factory {}
  print("holding " .. base_sandbox.id .. " " .. a.id .. " " .. b.id)
  e2e.sleep(6)
end)

test("creates one more afterwards", function(sandbox_factory)
  local s = sandbox_factory {}
  print("late " .. s.id)
  e2e.sleep(60)
end)
