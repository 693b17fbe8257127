-- (c)-(e) A test that holds three sandboxes and sleeps: the driver signals
-- or kills the runner while it waits.
local e2e = require "e2e"
local test = e2e.test

test("holds three sandboxes", function(base_sandbox, sandbox_factory)
  local a, b = sandbox_factory {}, sandbox_factory {}
  print("holding " .. base_sandbox.id .. " " .. a.id .. " " .. b.id)
  e2e.sleep(120)
end)
